"""Development sessions: ``nox -l`` lists them, ``nox -s NAME`` runs one.

Each session builds its own virtualenv (in ``.nox/``) from pyproject.toml, so a session that
passes here passes on a fresh machine. Add ``-r`` (``--reuse-existing-virtualenvs``) to skip
the reinstall on later runs. The test sessions install the ``test`` extra only: the local
judge's engine (the ``local`` extra) is for the end-to-end tests, which they skip.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.default_venv_backend = "venv"

# Oldest and newest Python this package supports and this machine has.
OLDEST_PYTHON = "3.11"
NEWEST_PYTHON = "3.13"
# The oldest pytest pyproject.toml accepts ("pytest>=8.0").
OLDEST_PYTEST = "8.0.0"
# The oldest litellm pyproject.toml accepts ("litellm>=1.106,...").
OLDEST_LITELLM = "1.106.0"
# The fast suite (no real model, none of the `slow` tests); posargs replace it (e.g. ``nox -s tests -- tests/test_cache.py -x``).
FAST_SUITE = ("-q", "-n", "2", "-m", "not e2e and not slow")
BENCHMARKS = ("startup_overhead", "cache_overhead", "soft_claims_concurrency", "xdist_cold")


def _run_tests(session: nox.Session) -> None:
    session.env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    session.run("python", "-m", "pytest", *(session.posargs or FAST_SUITE))


@nox.session
def tests(session: nox.Session) -> None:
    """The fast suite (no end-to-end tests) with the newest releases pip finds."""
    session.install("-e", ".[test]")
    _run_tests(session)


@nox.session(name="tests-oldest", python=OLDEST_PYTHON)
def tests_oldest(session: nox.Session) -> None:
    """The fast suite on the oldest Python and pytest this package supports."""
    session.install("-e", ".[test]", f"pytest=={OLDEST_PYTEST}")
    _run_tests(session)


@nox.session(name="tests-newest", python=NEWEST_PYTHON)
def tests_newest(session: nox.Session) -> None:
    """The fast suite on the newest Python here, with the newest releases pip finds."""
    session.install("--upgrade", "-e", ".[test]", "pytest")
    _run_tests(session)


@nox.session(name="tests-litellm-lowest")
def tests_litellm_lowest(session: nox.Session) -> None:
    """The fast suite on the oldest litellm pyproject.toml allows."""
    session.install("-e", ".[test]", f"litellm=={OLDEST_LITELLM}")
    _run_tests(session)


@nox.session(name="tests-litellm-highest")
def tests_litellm_highest(session: nox.Session) -> None:
    """The fast suite on the newest litellm pyproject.toml allows (what a fresh install gets)."""
    session.install("--upgrade", "-e", ".[test]", "litellm")
    _run_tests(session)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff's checks and its formatting (Markdown code blocks keep their hand alignment)."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", "--extend-exclude", "*.md", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package (the settings are in pyproject.toml)."""
    session.install("-e", ".[test]")
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site, built strictly (broken links and orphan pages fail it) into site/.

    ``nox -s docs -- serve`` serves it with live reload instead.
    """
    session.install("-e", ".[docs]")
    session.env["NO_MKDOCS_2_WARNING"] = "1"
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", *session.posargs[1:])
        return
    session.run("mkdocs", "build", "--strict", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmarks (bench/README.md); long. ``nox -s bench -- NAME [ARGS]`` runs one.

    The local model's benchmark needs the ``local`` extra: ``nox -s bench -- local_model``.
    """
    if session.posargs and session.posargs[0] == "local_model":
        session.install("-e", ".[test,local]")
    else:
        session.install("-e", ".[test]")
    session.env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    if session.posargs:
        name, *args = session.posargs
        session.run("python", f"bench/{name}.py", *args)
        return
    for name in BENCHMARKS:
        session.run("python", f"bench/{name}.py")
