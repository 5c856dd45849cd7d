import sys

from perspect.cli.main import main

sys.exit(main())
