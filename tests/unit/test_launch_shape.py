"""The cluster-shape column: ncu's launch__cluster_dim_x/y/z (0 for a launch without clusters)
read as "(x, y, z)" or None, and absent columns (nsys rows) as None. The stored ch10 capture
in test_report/test_api shows it end to end; this pins the reading rules."""
import pandas as pd

from aisp_prof.analyze.kernels.launch_shape import cluster_dim


def test_cluster_launches_read_as_shapes_and_plain_launches_as_none():
    frame = pd.DataFrame({"cluster_dim_x": [0, 4, 2.0, None, 16], "cluster_dim_y": [0, 1, 1, 1, 1],
                          "cluster_dim_z": [0, 1, 1, 1, 1]}, index=[7, 8, 9, 10, 11])
    assert cluster_dim(frame).tolist() == [None, "(4, 1, 1)", "(2, 1, 1)", None, "(16, 1, 1)"]
    assert list(cluster_dim(frame).index) == [7, 8, 9, 10, 11]


def test_rows_without_cluster_columns_have_no_shape():
    assert cluster_dim(pd.DataFrame({"grid": ["(1, 1, 1)"]})).tolist() == [None]
    assert cluster_dim(pd.DataFrame()).tolist() == []
