import sys

from mock_server.cli import main

sys.exit(main())
