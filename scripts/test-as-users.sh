#!/usr/bin/env bash
# Run the tests whose guarantees depend on who runs labcoat as two ordinary users that
# this script creates (it needs root: CI runs it after the suite):
#   labcoat-separate  has a subordinate id range  -> rootless with separate users
#   labcoat-one       has none                    -> rootless, one user
# Each gets a copy of this checkout and its own .venv (Debian's python3), and its run
# fails if labcoat chose another mode than the one expected (LABCOAT_EXPECT_MODE).
#   scripts/test-as-users.sh [PYTEST-ARGS...]   (test paths among them replace the list)
#   scripts/test-as-users.sh --prepare          (only the users, copies and installs)
# The two users are independent (own copy, own venv, own sandboxes), so their installs and
# their runs go side by side: on 2 cores most of a run is waiting on sandboxes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf 'test-as-users: %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ]; then
    say "needs root (it creates the users)"
    exit 2
fi
# what an ordinary user's rootless modes use: the id-mapping helpers, FUSE for the disk
# quota (/dev/fuse is 0666 where udev runs; user_allow_other lets the mapped root of a
# separate-users sandbox into a user's FUSE mount)
need=()
command -v newuidmap >/dev/null 2>&1 || need+=(uidmap)
command -v fuse2fs >/dev/null 2>&1 || need+=(fuse2fs)
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null \
        || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }
fi
[ -c /dev/fuse ] && chmod 0666 /dev/fuse
grep -qx user_allow_other /etc/fuse.conf 2>/dev/null || echo user_allow_other >> /etc/fuse.conf

# the tests of isolation, grading and integrity where the modes differ (whole files, or
# the tests of a file that are about the mode: the rest runs in the root suite)
TESTS=(
    tests/sandbox/test_isolation.py
    tests/sandbox/test_disk.py
    tests/sandbox/test_image.py
    tests/sandbox/test_per_user_folders.py
    tests/sandbox/test_refused_namespaces.py
    tests/sandbox/test_sample_channels.py
    tests/test_check_cmd.py
    tests/researchcodebench/test_grading.py
    tests/researchgym/test_eval.py::test_agent_code_run_by_the_grader_cannot_read_heldout_data
    tests/researchgym/test_eval.py::test_what_agent_code_leaves_does_not_outlive_its_run
    tests/researchgym/test_cheats_round4.py
    "tests/integrity/test_cheat_corpus.py::test_cheat[prefix-kill-scorer]"
    "tests/integrity/test_cheat_corpus.py::test_cheat[prefix-slow-yardsticks]"
    "tests/integrity/test_cheat_corpus.py::test_cheat[secret-read-root]"
    tests/paperbench/test_reproduce.py::test_the_run_is_the_agent_users
    tests/paperbench/test_reproduce.py::test_a_reproduction_finds_none_of_the_graders_files
    tests/paperbench/test_integrity.py::test_a_wrong_method_that_answers_the_recompute_gains_nothing
    tests/rebench/test_standard_runs.py::test_protected_scoring_as_metr_s_games_family
    tests/rebench/test_standard_runs.py::test_a_protected_file_the_agent_replaces_is_put_back_before_scoring
    tests/agents/test_human_integrity.py::test_no_work_goes_on_while_the_clock_is_paused
    tests/sandbox/test_writable_places.py tests/researchgym/test_replay_outside_the_state.py
    tests/researchcodebench/test_cheats.py tests/researchcodebench/test_cheats_at_run_time.py
)

make_user() {  # USER WITH_RANGE (one at a time: useradd and usermod lock /etc/passwd)
    local user="$1" with_range="$2"
    if ! id "$user" >/dev/null 2>&1; then
        # a system account gets no subordinate range from useradd; an ordinary one does
        if [ "$with_range" = yes ]; then
            useradd --create-home --shell /bin/bash "$user"
        else
            useradd --system --create-home --shell /bin/bash "$user"
        fi
    fi
    if [ "$with_range" = yes ]; then
        grep -q "^$user:" /etc/subuid || usermod --add-subuids 300000-365535 "$user"
        grep -q "^$user:" /etc/subgid || usermod --add-subgids 300000-365535 "$user"
    else
        sed -i "/^$user:/d" /etc/subuid /etc/subgid
    fi
}

install_for() {  # USER [MODE]: a fresh copy of the checkout, its .venv kept
    local user="$1" home
    home="$(getent passwd "$user" | cut -d: -f6)"
    rm -rf "$home/labcoat.new"
    mkdir -p "$home/labcoat.new"
    # without what runs beside this write into the checkout (CI's type check and suite:
    # tar fails on a file that changes while it is read) and nothing a copy needs
    (cd "$root" && tar --exclude=./.venv --exclude=./.git --exclude=./.mypy_cache \
        --exclude=./.pytest_cache --exclude=./.ruff_cache --exclude=./logs \
        --exclude=./test-artifacts --exclude=__pycache__ -cf - .) | tar -xf - -C "$home/labcoat.new"
    if [ -d "$home/labcoat/.venv" ]; then  # keep its .venv: a rerun installs nothing
        mv "$home/labcoat/.venv" "$home/labcoat.new/.venv"
    fi
    rm -rf "$home/labcoat"
    mv "$home/labcoat.new" "$home/labcoat"
    chown -R "$user:" "$home/labcoat"
    su "$user" -c "cd ~/labcoat && PATH=/usr/local/bin:/usr/bin:/bin ./scripts/bootstrap.sh --dev" 2>&1 \
        | sed -u "s/^/[$user] /" >&2
}

# both jobs, side by side; fails if either did (after both have ended)
both() {  # FUNCTION ARGS...: FUNCTION USER MODE ARGS... for each user
    local fn="$1" a b status=0
    shift
    "$fn" labcoat-separate rootless-separate-users "$@" & a=$!
    "$fn" labcoat-one rootless-one-user "$@" & b=$!
    wait "$a" || status=$?
    wait "$b" || status=$?
    return "$status"
}

# test paths given on the command line replace the list (options such as -q are added to it)
for arg in "$@"; do
    case "$arg" in
        tests/*) TESTS=(); break ;;
    esac
done

run_as() {  # USER MODE PYTEST-ARGS...  (each line of its output begins [USER])
    local user="$1" mode="$2" only=()
    shift 2
    # the tests run in every mode a user can (tests/isolation_modes.py): labcoat-one runs
    # each one-user case as an ordinary user, its only mode, and the root suite runs them
    # with a separate root at hand; labcoat-separate leaves them out (a -k given wins)
    if [ "$mode" = rootless-separate-users ] && ! printf '%s\n' "$@" | grep -q '^-k'; then
        only=(-k "not one-user")
    fi
    say "$user ($mode): ${TESTS[*]:-$*} ${only[*]}"
    su "$user" -c "cd ~/labcoat && LABCOAT_EXPECT_MODE=$mode LABCOAT_REQUIRE_BROWSER=${LABCOAT_REQUIRE_BROWSER:-} \
        .venv/bin/python -m pytest -n 2 --dist loadfile -p no:cacheprovider $(printf '%q ' "${only[@]}" "$@" "${TESTS[@]}")" 2>&1 \
        | sed -u "s/^/[$user] /"
}

make_user labcoat-separate yes
make_user labcoat-one no
both install_for
[ "${1:-}" = --prepare ] && exit 0
both run_as "$@"
