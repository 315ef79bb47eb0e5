"""A family that records what each step of the standard saw: build steps, install(),
start(), the sample's uuid and task name, the protected group, the resources asked for."""

import os
import pathlib
import shutil
import subprocess

HOME = pathlib.Path("/home/agent")


class TaskFamily:
    standard_version = "0.5.0"

    # no get_instructions: the standard's runners give the agent an empty string

    @staticmethod
    def get_tasks() -> dict:
        return {
            "small": {"needs": "cpus 1, memory 1 GiB"},
            "gpu": {"needs": "one h100"},
            "online": {"needs": "the internet"},
            "aux": {"needs": "an aux VM"},
        }

    @staticmethod
    def get_permissions(t: dict) -> list[str]:
        return ["full_internet"] if t["needs"] == "the internet" else []

    @staticmethod
    def get_aux_vm_spec(t: dict):
        if t["needs"] != "an aux VM":
            return None
        return {"cpu_count_range": [2, 2], "ram_gib_range": [1, 1]}

    @staticmethod
    def install() -> None:
        shutil.copy("/root/assets/install.txt", HOME / "install.txt")
        pathlib.Path("/root/installed.txt").write_text(f"uid {os.getuid()}\n")

    @staticmethod
    def start(t: dict) -> None:
        shutil.copy("/root/assets/start.txt", HOME / "start.txt")
        (HOME / "sample_uuid.txt").write_text(pathlib.Path("/var/run/sample_uuid").read_text())
        (HOME / "task_name.txt").write_text(os.environ.get("TASK_NAME", "?"))
        (HOME / ".cache").mkdir(exist_ok=True)
        (HOME / ".cache" / "kept_by_root.txt").write_text("hidden top-level folder")
        kept = HOME / "kept_by_protected.txt"
        kept.write_text("readable, not writable, by the agent")
        os.chown(kept, 0, __import__("grp").getgrnam("protected").gr_gid)
        kept.chmod(0o444)
        pathlib.Path("/root/started.txt").write_text("start ran")
        pathlib.Path("/protected/from_start.txt").write_text("only root and protected")

    @staticmethod
    def score(t: dict, submission: str) -> float:
        # everything the earlier steps left is still where they left it
        needed = ["/root/installed.txt", "/root/started.txt", "/protected/held_out.txt",
                  "/protected/from_start.txt", "/root/data/nested.txt"]
        missing = [p for p in needed if not os.path.exists(p)]
        print("missing:", missing)
        threads = subprocess.run(["sh", "-c", "echo $OMP_NUM_THREADS"], capture_output=True, text=True)
        print("threads:", threads.stdout.strip())
        return float(not missing and submission == "done")

    @staticmethod
    def teardown() -> None:
        print("teardown of", os.environ.get("TASK_NAME"))
