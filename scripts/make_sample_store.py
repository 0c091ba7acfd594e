"""Write poolsplit_core/data/sample_store.jsonl, the memory store the demo ships with.

The store is a year of a personal agent's memory for a software engineer who
runs three work projects (``atlas``, a billing service; ``harbor``, the
infrastructure; ``lumen``, a mobile app) and a ``home`` life. It is generated,
not collected: every entry comes from the templates below, drawn with
``random.Random(SEED)``, and dated relative to a fixed ``NOW`` -- no wall clock,
so running the script twice gives the same file byte for byte::

    python scripts/make_sample_store.py          # rewrite the shipped file
    python scripts/make_sample_store.py --check  # exit 1 if it is stale

The shape is chosen so that the problem poolsplit solves is real in it:
the high-priority types (task, fact, preference, procedure, note) are many
and share the words of the demo's queries, the low-priority ones (skill,
growth) are few, and the ten behavioural corrections were written months
ago, so a single scorer with a single budget ranks them below fresh work.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

SEED = 20261101
NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
OUT = Path(__file__).resolve().parent.parent / "poolsplit_core" / "data" / "sample_store.jsonl"

# Each topic: (project, tags, subjects). Subjects are noun phrases the
# templates drop into sentences; the demo's queries use the same words.
TOPICS = {
    "migration": ("atlas", ["database", "postgres"], [
        "the invoices table migration", "the Postgres upgrade to version 16",
        "the Alembic migration for invoice line items", "the database index on customer ids",
    ]),
    "invoices": ("atlas", ["billing", "export"], [
        "the invoice export to CSV", "the monthly invoice run", "the PDF invoice template",
        "the invoice rounding bug",
    ]),
    "release": ("atlas", ["release", "ci"], [
        "the release notes for version 2.4", "the release branch", "the hotfix release",
        "the changelog for the billing release",
    ]),
    "tests": ("atlas", ["ci", "testing"], [
        "the flaky integration tests", "the test suite on CI", "the rate limit tests",
        "the slow end-to-end tests",
    ]),
    "review": ("atlas", ["review", "git"], [
        "the pull request for the rate limit fix", "the code review backlog",
        "the review of the export refactor", "the commit history on main",
    ]),
    "deploy": ("harbor", ["deploy", "kubernetes"], [
        "the staging deploy", "the Kubernetes cluster upgrade", "the Helm chart for the API",
        "the production deploy pipeline",
    ]),
    "backups": ("harbor", ["backups", "storage"], [
        "the nightly database backups", "the backup bucket on S3", "the restore drill",
        "the Terraform module for the backup bucket",
    ]),
    "alerts": ("harbor", ["oncall", "monitoring"], [
        "the disk usage alert", "the on-call rotation", "the Grafana dashboard for latency",
        "the incident review for the outage",
    ]),
    "secrets": ("harbor", ["security"], [
        "the staging API key", "the secrets manager", "the contractor's access to staging",
        "the key rotation schedule",
    ]),
    "ios": ("lumen", ["mobile", "ios"], [
        "the iOS build on Xcode Cloud", "the App Store review", "the crash reports from TestFlight",
        "the push notification settings",
    ]),
    "design": ("lumen", ["design", "meetings"], [
        "the onboarding screens with the design team", "the design review meeting",
        "the icon set from the designer", "the dark mode colours",
    ]),
    "taxes": ("home", ["finance"], [
        "the quarterly taxes", "the receipts for the accountant",
        "the invoice to the client in Lyon", "the VAT return",
    ]),
    "health": ("home", ["health"], [
        "the dentist appointment", "the marathon training plan", "the physio exercises",
        "the long run on Sunday",
    ]),
    "household": ("home", ["errands"], [
        "the grocery list", "the birthday gift for Ana", "the bike repair",
        "the laptop disk clean-up",
    ]),
    "travel": (None, ["travel"], [
        "the train to Berlin", "the conference talk in Lisbon", "the hotel booking for the offsite",
        "the call with Maya in Lisbon",
    ]),
}

PEOPLE = ["Maya", "Jonas", "Priya", "Tom", "Lea", "Sam", "Ana", "Ravi"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the end of the sprint"]

TEMPLATES = {
    "task": [
        "Finish {s} before {day}.",
        "Follow up with {p} about {s}.",
        "Review {s} and leave comments for {p}.",
        "Write up the status of {s} for the weekly update.",
        "Unblock {p} on {s} this week.",
        "Schedule time on {day} to work through {s}.",
    ],
    "fact": [
        "{p} owns {s} and is the person to ask about it.",
        "{S} was last changed in the spring and still works.",
        "The runbook for {s} lives in the team wiki under operations.",
        "{S} depends on the shared config in the platform repo.",
        "{p} said {s} takes about two hours end to end.",
    ],
    "preference": [
        "The user prefers short bullet summaries when reporting on {s}.",
        "For {s}, the user likes a checklist rather than prose.",
        "The user wants {p} copied on anything about {s}.",
        "When discussing {s}, the user prefers concrete numbers over adjectives.",
    ],
    "procedure": [
        "To handle {s}: check the dashboard, read the last log lines, then write the plan down.",
        "Steps for {s}: open a branch, make the change, run the checks, ask {p} to review.",
        "For {s}, first confirm the current state, then change one thing at a time.",
        "Routine for {s}: note what changed, who was told, and when to look again.",
    ],
    "note": [
        "Talked with {p} about {s}; nothing decided yet.",
        "{S} came up again in the standup on {day}.",
        "Idea: automate part of {s} once things calm down.",
        "{p} mentioned that {s} was slower than expected.",
        "Reminder that {s} is on the agenda for {day}.",
        "Open question on {s}: who signs it off?",
    ],
    "skill": [
        "Skill: got faster at {s} by writing the commands down first.",
        "Skill: can now debug {s} without asking {p}.",
        "Skill: learned the keyboard shortcuts that make {s} quicker.",
    ],
    "growth": [
        "Growth: wants to get better at estimating {s}.",
        "Growth: practise explaining {s} to non-engineers.",
        "Growth: ask {p} for feedback after {s}.",
    ],
}

# (type, how many, base_priority range, share retired)
PLAN = [
    ("task", 130, (7, 9), 0.12),
    ("fact", 110, (6, 8), 0.05),
    ("preference", 55, (6, 8), 0.05),
    ("procedure", 70, (6, 8), 0.04),
    ("note", 140, (5, 7), 0.06),
    ("skill", 30, (2, 3), 0.05),
    ("growth", 16, (1, 2), 0.0),
]

# Behavioural corrections: the things the user told the agent never to do
# again. Each one has the situation it exists for; the demo asks those.
CORRECTIONS = [
    ("Never force-push to main. Push the hotfix to a branch, open a pull request and let CI "
     "run.", "release"),
    ("Always run the full test suite before saying a task is done.", "tests"),
    ("Never run a database migration on production without a fresh backup taken first.",
     "migration"),
    ("Ask before deleting any files outside the project directory.", "household"),
    ("Never paste an API key or password into chat or a commit; share it through the secrets "
     "manager.", "secrets"),
    ("When writing to the accountant, quote amounts in euros, not dollars.", "taxes"),
    ("Do not book meetings before 10:00; mornings are for deep work.", "design"),
    ("Check the time zone before proposing a call time; Maya is in Lisbon.", "travel"),
    ("Write commit messages in the imperative mood and reference the issue number.", "review"),
    ("Do not tell on-call an incident is resolved until the alert has been quiet for 30 "
     "minutes.", "alerts"),
]


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def build(seed: int = SEED) -> list[dict[str, object]]:
    """Return the store's entries, in file order; a pure function of ``seed``."""
    rng = random.Random(seed)
    topics = sorted(TOPICS)
    entries: list[dict[str, object]] = []

    for n, (content, topic) in enumerate(CORRECTIONS, start=1):
        project, tags, _ = TOPICS[topic]
        entries.append({
            "id": f"correction-{n:03d}",
            "type": "correction",
            "scope": "always",
            "content": content,
            "base_priority": 10,
            "project": project,
            "tags": list(tags),
            # Written months ago: to a single scorer they look stale.
            "created": _iso(NOW - timedelta(days=rng.randint(120, 360), hours=rng.randint(0, 23))),
        })

    for kind, count, (low, high), retired_share in PLAN:
        for n in range(1, count + 1):
            topic = rng.choice(topics)
            project, tags, subjects = TOPICS[topic]
            subject = rng.choice(subjects)
            text = rng.choice(TEMPLATES[kind]).format(
                s=subject, S=subject[0].upper() + subject[1:],
                p=rng.choice(PEOPLE), day=rng.choice(DAYS),
            )
            entry: dict[str, object] = {
                "id": f"{kind}-{n:03d}",
                "type": kind,
                "content": text,
                "base_priority": rng.randint(low, high),
                "project": project,
                "tags": rng.sample(tags, k=rng.randint(1, len(tags))),
                "created": _iso(NOW - timedelta(days=rng.uniform(0.5, 365))),
            }
            if rng.random() < 0.1:
                # Long entries (meeting transcripts, pasted logs) carry their
                # size measured upstream.
                entry["token_count"] = rng.randint(150, 600)
            if rng.random() < retired_share:
                entry["status"] = "retired"
                if rng.random() < 0.6 and n > 1:
                    entry["superseded_by"] = f"{kind}-{rng.randint(1, n - 1):03d}"
            entries.append(entry)
    return entries


def render(entries: list[dict[str, object]]) -> str:
    """Serialise entries as JSON Lines, one entry per line, stable key order."""
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)


def main(argv: list[str] | None = None, *, build: Callable[[], list[dict[str, object]]] = build,
         out: Path = OUT, script: str = "scripts/make_sample_store.py",
         description: str = __doc__.splitlines()[0]) -> int:
    """Write (or with ``--check``, compare) the store ``build`` makes; the Chinese script too."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 when the shipped file differs")
    parser.add_argument("--out", type=Path, default=out,
                        help="where to write (default: %(default)s)")
    args = parser.parse_args(argv)
    text = render(build())
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run {script}", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {len(text.splitlines())} entries to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
