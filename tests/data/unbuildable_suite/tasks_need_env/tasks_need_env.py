"""get_tasks() imports a package only its requirements provide: listing must run it in
the family's environment, which cannot be built here."""


class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_tasks() -> dict:
        import labcoat_unbuildable_suite_helper  # type: ignore[import-not-found]

        return labcoat_unbuildable_suite_helper.TASKS

    @staticmethod
    def get_instructions(t: dict) -> str:
        return "Do what the helper says."

    @staticmethod
    def score(t: dict, submission: str) -> float:
        return 0.0
