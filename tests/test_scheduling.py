"""`make test`'s grouping (tests/conftest.py): a module's tests on one xdist worker, the docs
pages each on their own, the slowest modules first. Its failure costs minutes, not a red test: a
module spread over two workers builds its fixtures twice (a fit module paid 125 s twice before)."""

from __future__ import annotations

from types import SimpleNamespace

from tests import conftest


class _Config(SimpleNamespace):
    def getvalue(self, name):
        return getattr(self.option, name)


def _scheduler(dist: str):
    config = _Config(option=SimpleNamespace(dist=dist, loadscopereorder=True, tx=["2*popen"]))
    return config, conftest.pytest_xdist_make_scheduler(config, log=None)


def test_a_module_is_one_scope_and_a_docs_page_its_own():
    config, scheduler = _scheduler("loadscope")
    scope = scheduler._split_scope
    assert (
        scope("tests/bayes/test_warm.py::test_a[x-0]")
        == scope("tests/bayes/test_warm.py::test_b")
        == ("tests/bayes/test_warm.py")
    )
    assert scope("molp2s_stats/units.py::molp2s_stats.units.percent") == "molp2s_stats/units.py"
    page = "tests/docs/test_docs.py::test_every_block_runs_and_shows_what_it_prints[README.md]"
    assert scope(page) == page
    assert config.option.loadscopereorder is False  # the collection's order: slowest modules first


def test_other_distribution_modes_are_xdists_own():
    assert _scheduler("load")[1] is None


def test_the_slowest_modules_come_first_and_keep_their_order():
    items = [SimpleNamespace(nodeid=n) for n in ("tests/a.py::x", "tests/cli/test_cli_help.py::y", "tests/a.py::z")]
    items.append(SimpleNamespace(nodeid="tests/docs/test_docs.py::w"))
    conftest.pytest_collection_modifyitems(None, items)
    assert [i.nodeid for i in items] == [
        "tests/docs/test_docs.py::w",
        "tests/cli/test_cli_help.py::y",
        "tests/a.py::x",
        "tests/a.py::z",
    ]
