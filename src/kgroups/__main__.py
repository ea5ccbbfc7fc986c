from kgroups.cli import main

raise SystemExit(main())
