import sys

from kgroups.spark.analytics.main import main

sys.exit(main())
