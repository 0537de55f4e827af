import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from revlib import plot  # noqa: E402


def _figure():
    plot.set_theme()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    return fig


def test_savefig_writes_three_stable_files(tmp_path):
    fig = _figure()
    paths = plot.savefig(fig, "fig-test", tmp_path)
    assert sorted(p.name for p in paths) == [
        "fig-test.pdf",
        "fig-test.png",
        "fig-test.svg",
    ]
    first = {p.name: p.read_bytes() for p in paths}
    plot.savefig(_figure(), "fig-test", tmp_path)  # the same figure, built afresh
    assert first["fig-test.svg"] == (tmp_path / "fig-test.svg").read_bytes()
    assert first["fig-test.pdf"] == (tmp_path / "fig-test.pdf").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        first
    )  # no temp files left
    assert all(p.stat().st_mode & 0o044 == 0o044 for p in paths)  # readable by all


def test_savefig_failure_leaves_nothing(tmp_path, monkeypatch):
    fig = _figure()
    real = fig.savefig

    def failing(fname, format=None, **kw):
        if format == "png":
            raise RuntimeError("disk full")
        return real(fname, format=format, **kw)

    monkeypatch.setattr(fig, "savefig", failing)
    with pytest.raises(RuntimeError):
        plot.savefig(fig, "fig-broken", tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("label", ["Fig Loss", "", "../x", "fig_loss"])
def test_savefig_rejects_bad_labels(tmp_path, label):
    with pytest.raises(ValueError, match="label"):
        plot.savefig(_figure(), label, tmp_path)


def test_heatmap_stays_small_in_vector_files(tmp_path):
    import numpy as np

    plot.set_theme()
    fig, ax = plt.subplots()
    plot.heatmap(ax, np.random.default_rng(0).normal(size=(200, 200)), "big")
    plot.savefig(fig, "fig-heat", tmp_path)
    assert (tmp_path / "fig-heat.svg").stat().st_size < 500_000
    assert (tmp_path / "fig-heat.pdf").stat().st_size < 500_000
