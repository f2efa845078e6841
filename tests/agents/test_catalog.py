"""The provider catalog builtins (harnpy/llm/catalog.toml via harnpy/lifecycle/
catalog_builtins.py): provider config and inference, aliases and model metadata, the
capability matrix with version gates and family inheritance, user-installed rows, catalog
prices, healthcheck answers, and the state surviving a program snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnpy.llm import catalog
from tests.agents.conftest import RunHarn, lines
from tests.conftest import harnpy


def test_every_capability_row_compiles_and_every_provider_has_an_auth_style() -> None:
    cat = catalog.bundled()
    assert {"anthropic", "openai", "ollama", "local", "mock"} <= set(cat["providers"])
    for name, entry in cat["providers"].items():
        assert entry["auth_style"] in ("header", "bearer", "none", "aws_sigv4", "oauth"), name
        assert entry["family"], name


@pytest.mark.parametrize(
    ("provider", "model", "defer", "search"),
    [
        ("anthropic", "claude-sonnet-4-20250514", True, ["bm25", "regex"]),
        ("anthropic", "claude-haiku-4-4", False, []),
        ("anthropic", "claude-haiku-4-5", True, ["bm25", "regex"]),
        ("openai", "gpt-5.3", False, []),
        ("openai", "gpt-5.4", True, ["hosted", "client"]),
        ("openrouter", "openai/gpt-5.4", True, ["hosted", "client"]),
        ("mock", "claude-opus-4-7", True, ["bm25", "regex"]),
        ("mock", "mystery", False, []),
    ],
)
def test_capability_version_gates(provider: str, model: str, defer: bool, search: list) -> None:
    caps = catalog.capabilities(provider, model)
    assert caps["defer_loading"] is defer
    assert caps["tool_search"] == search


def test_installed_rows_win_over_the_bundled_matrix_and_clear_restores_it(
    run_harn: RunHarn,
) -> None:
    out, _ = run_harn(
        """
pipeline main(task) {
  println(provider_capabilities("ollama", "my-model").native_tools)
  let n = provider_capabilities_install("[[capabilities.ollama]]\\nmodel = '^my-'\\nnative_tools = true\\nmax_tools = 12\\n")
  println(n)
  let caps = provider_capabilities("ollama", "my-model")
  println(caps.native_tools)
  println(caps.max_tools)
  provider_capabilities_clear()
  println(provider_capabilities("ollama", "my-model").native_tools)
  let bad = try { provider_capabilities_install("[[capabilities.x]]\\nmodel = '('\\n") } catch (e) { e }
  println(contains(bad, "bad model regex"))
}
"""
    )
    assert lines(out) == ["false", "1", "true", "12", "false", "true"]


def test_aliases_prefixes_tiers_and_pricing(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(task) {
  println(llm_resolve_model("mid"))
  println(llm_resolve_model("ollama:qwen3:8b").id)
  println(llm_model_tier("llama-3.1-405b"))
  println(llm_model_tier("mistral-22b"))
  println(llm_model_info("claude-sonnet-4-20250514").catalog.pricing.output_per_mtok)
  println(llm_model_info("gpt-4o").tool_format)
  println(llm_infer_provider("gemini-2.5-pro"))
}
"""
    )
    assert lines(out) == [
        "{alias: mid, id: gpt-4o-mini, provider: openai}",
        "qwen3:8b",
        "frontier",
        "mid",
        "15.0",
        "native",
        "gemini",
    ]


def test_catalog_prices_scale_with_tokens_and_cache_reads_are_cheaper() -> None:
    one = catalog.cost_usd("gpt-4o", 1000, 0)
    assert catalog.cost_usd("gpt-4o", 2000, 0) == pytest.approx(2 * one)
    assert catalog.cost_usd("gpt-4o", 1_000_000, 0) == pytest.approx(2.5)
    assert catalog.cost_usd("gpt-4o", 0, 0, cache_read_tokens=1000) < one
    assert catalog.cost_usd("no-such-model", 1000, 1000) == 0.0


def test_healthcheck_answers_without_network(run_harn: RunHarn, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out, _ = run_harn(
        """
pipeline main(task) {
  let a = llm_healthcheck("anthropic")
  println(a.status)
  println(llm_healthcheck({provider: "anthropic", api_key: "k"}).status)
  println(llm_healthcheck("mock").valid)
  println(llm_healthcheck("ollama", {warm: true}).metadata.reason)
  println(llm_healthcheck("ollama", {warm: true, model: "qwen3:8b"}).status)
}
"""
    )
    # the last probe is refused by HARN_LLM_CALLS_DISABLED (set for every test)
    assert lines(out) == ["missing_credentials", "ok", "true", "invalid_request", "disabled"]


def test_installed_rows_survive_a_program_snapshot(tmp_path: Path) -> None:
    prog = tmp_path / "prog.harn"
    prog.write_text(
        """
pipeline main(task) {
  provider_capabilities_install("[[capabilities.ollama]]\\nmodel = '^zz'\\nnative_tools = true\\n")
  __snapshot_exit(env("SNAP"))
  println(provider_capabilities("ollama", "zz-1").native_tools)
}
"""
    )
    snap = tmp_path / "state.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap)})
    assert first.returncode == 3, first.stderr
    assert json.loads(snap.read_text())["runtime_state"]["llm_catalog"]
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == ["true"]


def test_healthcheck_probe_reads_the_http_status(run_harn: RunHarn, monkeypatch) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            seen.append((self.path, self.headers.get("Authorization")))
            ok = self.headers.get("Authorization") == "Bearer good"
            self.send_response(200 if ok else 401)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.delenv("HARN_LLM_CALLS_DISABLED", raising=False)
    try:
        out, _ = run_harn(
            f"""
pipeline main(task) {{
  println(llm_healthcheck("openai", {{probe: true, base_url: "{base}", api_key: "good"}}).status)
  println(llm_healthcheck("openai", {{probe: true, base_url: "{base}", api_key: "bad"}}).status)
}}
"""
        )
    finally:
        server.shutdown()
    assert lines(out) == ["ok", "invalid_credentials"]
    assert seen == [("/v1/models", "Bearer good"), ("/v1/models", "Bearer bad")]
