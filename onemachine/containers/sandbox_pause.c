/* The pod sandbox's process (the "pause" container) of onemachine's images: it holds the
 * pod's namespaces and does nothing else. It ends at once on SIGINT or SIGTERM and, as the
 * PID 1 of a pod that shares its process namespace, reaps every child that ends.
 * Built static (gcc -static) so that its image needs no other file. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void end(int signal_number) {
    (void)signal_number;
    _exit(0);
}

static void reap(int signal_number) {
    (void)signal_number;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction on_end = {.sa_handler = end};
    struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
    sigaction(SIGINT, &on_end, NULL);
    sigaction(SIGTERM, &on_end, NULL);
    sigaction(SIGCHLD, &on_child, NULL);
    for (;;) {
        pause();
    }
}
