"""What the scenarios have a code interpreter run, by what it does: the features name the
behaviour ("prints the sum of 1 and 1"), this module holds the code."""

from __future__ import annotations

# Python code, run as `python3 -c` or in a stateful interpreter's kernel.
PRINT_SUM = "print(1+1)"
STOP_OWN_KERNEL = "import os; os._exit(1)"


def set_variable(name: str, value: str) -> str:
    return f"{name} = {value}"


def print_variable(name: str) -> str:
    return f"print({name})"


def write_file(path: str, text: str) -> str:
    return f"open({path!r}, 'w').write({text!r})"


def print_file(path: str) -> str:
    return f"print(open({path!r}).read())"


# Commands, as PicoD runs them.


def exit_with(code: int) -> list[str]:
    return ["sh", "-c", f"exit {code}"]


def sleep_for(seconds: int) -> list[str]:
    return ["sleep", str(seconds)]


def print_text(text: str) -> list[str]:
    return ["echo", text]


def run_script(name: str) -> list[str]:
    return ["python3", name]
