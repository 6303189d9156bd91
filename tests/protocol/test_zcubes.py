"""ZCube bookkeeping of liquid clustering: which files an incremental OPTIMIZE reclusters."""

from __future__ import annotations

import json

from pydelta.protocol import zcubes


def _file(path: str, size: int, cube: str | None = None, columns: list[str] | None = None,
          provider: str | None = None, dv_cardinality: int | None = None) -> dict:
    tags = None
    if cube is not None:
        tags = [("ZCUBE_ID", cube), ("ZCUBE_ZORDER_BY", json.dumps(columns or ["k"]))]
        provider = provider or "liquid"
    dv = {"cardinality": dv_cardinality} if dv_cardinality is not None else None
    return {"path": path, "size": size, "tags": tags, "clustering_provider": provider,
            "deletion_vector": dv, "num_records": 100}


def _paths(rows: list[dict]) -> list[str]:
    return [r["path"] for r in rows]


def test_new_files_merge_into_partial_cubes_and_large_cubes_stay() -> None:
    files = [_file("big1", 60, "B"), _file("new", 5), _file("big2", 60, "B"), _file("small", 10, "S")]
    chosen = zcubes.clustering_candidates(files, ["k"], full=False, min_cube_size=100)
    assert _paths(chosen) == ["new", "small"]  # unclustered first, then the cubes below the minimum


def test_a_lone_cube_is_left_alone_unless_new_files_come() -> None:
    cube = [_file("a", 10, "C"), _file("b", 10, "C")]
    assert zcubes.clustering_candidates(cube, ["k"], full=False, min_cube_size=100) == []
    two = [*cube, _file("c", 10, "D")]
    assert _paths(zcubes.clustering_candidates(two, ["k"], full=False, min_cube_size=100)) == ["a", "b", "c"]


def test_other_columns_and_providers_wait_for_full() -> None:
    files = [_file("old", 10, "C", columns=["v"]), _file("foreign", 10, provider="other"), _file("new", 5)]
    assert _paths(zcubes.clustering_candidates(files, ["k"], full=False, min_cube_size=100)) == ["new"]
    assert sorted(_paths(zcubes.clustering_candidates(files, ["k"], full=True, min_cube_size=100))) == [
        "foreign", "new", "old"]


def test_deleted_rows_shrink_a_cube_below_the_minimum() -> None:
    files = [_file("a", 100, "C", dv_cardinality=50), _file("new", 5)]
    assert zcubes.logical_size(files[0]) == 50
    assert _paths(zcubes.clustering_candidates(files, ["k"], full=False, min_cube_size=80)) == ["new", "a"]


def test_cubes_are_grouped_by_size_and_tagged_fresh() -> None:
    files = [_file(str(i), 40) for i in range(5)]
    assert [_paths(g) for g in zcubes.group_into_cubes(files, 100)] == [["0", "1"], ["2", "3"], ["4"]]
    a, b = zcubes.new_cube_tags(["k", "s.a"]), zcubes.new_cube_tags(["k", "s.a"])
    assert a["ZCUBE_ZORDER_BY"] == '["k","s.a"]' and a["ZCUBE_ID"] != b["ZCUBE_ID"]
