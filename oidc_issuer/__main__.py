from oidc_issuer.cli import main

raise SystemExit(main())
