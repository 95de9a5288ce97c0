"""What one state change costs an open runs list: the page asks the list's view again. Before,
for the whole list (every run's row derived and drawn); now, for the changed rows alone
(`?rows=<id>`). 200 runs, 20 of them live (a tmux pane holding `sleep`), the rest ended; the
view is called in process through Django's test client, as htmx asks it.

  python -m bench.runs_list     one BENCH-RESULT line
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.common import django_setup, emit, kill_tmux_server, lab_env, make_live_run, tmpdir


def timed(client: object, url: str, n: int) -> tuple[float, int]:
    """Median server time in ms and the answer's size in bytes."""
    times, size = [], 0
    for _ in range(n):
        t = time.perf_counter()
        answer = client.get(url, headers={"HX-Request": "true"})  # type: ignore[attr-defined]
        times.append(1000 * (time.perf_counter() - t))
        assert answer.status_code == 200, answer.content[:200]
        size = len(answer.content)
    return statistics.median(times), size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--live", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    with tmpdir("lab-bench-list-") as tmp:
        env = lab_env(tmp)
        django_setup()
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.test import Client
        from django.utils import timezone

        from runs.models import Run

        try:
            ids = [make_live_run(i, tmp, sleeper=i < args.live)[0] for i in range(args.runs)]
            Run.objects.filter(pk__in=ids[args.live :]).update(ended_at=timezone.now())
            client = Client(HTTP_HOST=settings.ALLOWED_HOSTS[0])
            client.force_login(get_user_model().objects.create(username="bench-list", is_superuser=True))
            whole_ms, whole_b = timed(client, "/", args.repeat)
            row_ms, row_b = timed(client, f"/?rows={ids[0]}", args.repeat)
        finally:
            kill_tmux_server(env["LAB_TMUX_SOCKET"])
    emit(
        {
            "runs_list": {
                "runs": args.runs,
                "live": args.live,
                "whole_ms": round(whole_ms, 2),
                "whole_bytes": whole_b,
                "row_ms": round(row_ms, 2),
                "row_bytes": row_b,
            },
            "load_avg": os.getloadavg()[0],
        }
    )


if __name__ == "__main__":
    main()
