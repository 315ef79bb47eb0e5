"""Needs two secrets in every operation (as METR's secrets test family does)."""

import os

NAMES = ["LABCOAT_TEST_SECRET_A", "LABCOAT_TEST_SECRET_B"]


def _have() -> bool:
    return all(name in os.environ for name in NAMES)


def _need() -> None:
    if not _have():
        raise RuntimeError(f"missing secrets: {[n for n in NAMES if n not in os.environ]}")


class TaskFamily:
    standard_version = "0.5.0"
    required_environment_variables = ["LABCOAT_TEST_SECRET_A", "LABCOAT_TEST_SECRET_B"]

    @staticmethod
    def get_tasks() -> dict:
        return {"capital": {"answer": "Paris"}} if _have() else {}

    @staticmethod
    def get_instructions(t: dict) -> str:
        return "What is the capital of France?" if _have() else "no instructions without secrets"

    @staticmethod
    def install() -> None:
        _need()

    @staticmethod
    def start(t: dict) -> None:
        _need()

    @staticmethod
    def score(t: dict, submission: str) -> int:
        _need()
        return int(submission == t["answer"])

    @staticmethod
    def teardown() -> None:
        _need()
