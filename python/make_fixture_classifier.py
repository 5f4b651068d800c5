#!/usr/bin/python3
"""Golden fixtures for kernel classification (include/kernelformer/regression/classifier.hpp)
from scikit-learn's KNeighborsClassifier.

80 points in 2-D, three overlapping Gaussian clouds (np.random.seed(0)), 25 query points;
KNeighborsClassifier(n_neighbors=7) probabilities at the queries (uniform and 'distance'
weights) and the leave-one-out probabilities (cross_val_predict with LeaveOneOut). Continuous
data, so no ties in distance. Writes tests/fixtures/clf_*.npy (float64). Run with Debian's python:
    /usr/bin/python3 python/make_fixture_classifier.py
"""
import os

import numpy as np
from sklearn.model_selection import LeaveOneOut, cross_val_predict
from sklearn.neighbors import KNeighborsClassifier

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def main():
    np.random.seed(0)
    n = 80
    y = np.arange(n) % 3
    x = 0.8 * y[:, None] + 0.6 * np.random.normal(size=(n, 2))
    q = np.random.uniform(-1.0, 2.5, size=(25, 2))
    uniform = KNeighborsClassifier(n_neighbors=7).fit(x, y)
    distance = KNeighborsClassifier(n_neighbors=7, weights="distance").fit(x, y)
    loo = cross_val_predict(KNeighborsClassifier(n_neighbors=7), x, y, cv=LeaveOneOut(),
                            method="predict_proba")
    for name, a in [("x", x), ("y", y.astype(np.float64)), ("q", q),
                    ("knn7_q", uniform.predict_proba(q)), ("knn7_dist_q", distance.predict_proba(q)),
                    ("knn7_loo", loo)]:
        np.save(os.path.join(OUT, f"clf_{name}.npy"), np.ascontiguousarray(a, dtype=np.float64))
    print("wrote", OUT + "/clf_{x,y,q,knn7_q,knn7_dist_q,knn7_loo}.npy")


if __name__ == "__main__":
    main()
