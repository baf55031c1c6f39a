"""Writes nms.test's inputs: boxes [1, 6, 4] (y1, x1, y2, x2) and scores
[1, 2, 6], as .npy files."""
import sys

import numpy as np

boxes = np.array([[[0, 0, 1, 1], [0, 0, 0.9, 1], [5, 5, 6, 6],
                   [10, 10, 11, 11], [20, 20, 21, 21], [30, 30, 31, 31]]], np.float32)
scores = np.array([[[0.9, 0.8, 0.7, -1, -1, -1], [-1, 0.6, -1, -1, -1, -1]]], np.float32)
np.save(sys.argv[1], boxes)
np.save(sys.argv[2], scores)
