"""``harnpy serve``: an app's entry points over HTTP, as durable runs on a store.

Modules: :mod:`.program` (the app and its entry points), :mod:`.executor` (running claimed
runs under leases), :mod:`.completion` (completion snapshots, sanitized failures),
:mod:`.auth` (API keys), :mod:`.app` (the Starlette application), :mod:`.openapi`,
:mod:`.metrics`, :mod:`.waitpoint_routes`, :mod:`.config`, :mod:`.cli`. The client is
:mod:`harnpy.client`. See docs/serving.md and dev/impl.md ("Serving").
"""
