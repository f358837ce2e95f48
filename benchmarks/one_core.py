"""Importing this first pins numpy's BLAS and OpenCV to one thread (the speed benchmarks
measure one core): the thread variables must be set before numpy or cv2 is imported."""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
           "VECLIB_MAXIMUM_THREADS", "OPENCV_FOR_THREADS_NUM"):
    os.environ[_v] = "1"

import cv2  # noqa: E402

cv2.setNumThreads(1)
