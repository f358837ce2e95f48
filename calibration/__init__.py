"""Camera calibration for the tabletop tracker: intrinsics from a board, the table pose
from the table markers, pixel + height -> world inches with an honest 1-sigma, and a live
pose tracker that notices a bumped camera. See camera.py, markers.py, table.py, live.py,
intrinsics.py, boards.py, cli.py."""

from .camera import CameraModel, Intrinsics, TablePose, DEFAULT_PIXEL_SIGMA  # noqa: F401
from .markers import MarkerDetections, detect_markers  # noqa: F401
from .table import estimate_table_pose  # noqa: F401
