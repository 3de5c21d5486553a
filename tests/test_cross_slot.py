"""No transaction and no multi-key command of pmsearch names keys that a Redis Cluster
could place on two hash slots: read from the source, so a path no test or benchmark
drives is checked too (``bench.slots`` watches the commands a workload sends).

Two keys are taken to share a slot when they are the same expression, or when both are
a run's keys (``streams.run_key`` and the keys made from it, ``pm:run:{<run id>}:…``)
of the same run-id expression. Anything else is reported, so a new transaction over two
keys must either share a hash tag this check knows or be split."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# streams.py's functions whose key carries the run's hash tag (their first argument).
RUN_KEYS = {
    "run_key", "progress_key", "evidence_key", "final_key", "state_key", "lock_key", "snapshot_key",
    "meta_key", "watchdog_claim_key",
}
# Commands whose every positional argument is a key.
ALL_KEYS = {"delete", "unlink", "exists", "watch", "mget", "touch"}
# Pipeline calls that name no key.
KEYLESS = {"multi", "execute", "unwatch", "reset", "wait", "discard"}


def slot_of(node: ast.expr) -> str:
    """What decides the slot of the key ``node`` evaluates to, as text."""
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in RUN_KEYS and node.args:
            return f"the run {ast.unparse(node.args[0])}"
    return ast.unparse(node)


def _keys(call: ast.Call) -> list[ast.expr]:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if name in KEYLESS or not call.args:
        return []
    if name in ALL_KEYS:
        return [a for a in call.args if not isinstance(a, ast.Starred)]
    if name in {"xread", "xreadgroup"}:
        streams = call.args[-1] if name == "xread" else (call.args[2] if len(call.args) > 2 else None)
        return list(streams.keys) if isinstance(streams, ast.Dict) else []  # type: ignore[arg-type]
    if name == "blpop" and isinstance(call.args[0], ast.List):
        return list(call.args[0].elts)
    return [call.args[0]]


def _transaction_pipes(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """(pipe variable, with-block) for each ``with ....pipeline(transaction=True) as pipe``."""
    found = []
    for item in getattr(node, "items", []):
        call = item.context_expr
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "pipeline"
                and any(k.arg == "transaction" and getattr(k.value, "value", None) is True for k in call.keywords)
                and isinstance(item.optional_vars, ast.Name)):
            found.append((item.optional_vars.id, node))
    return found


def spanning(source: str) -> list[str]:
    """Each transaction and multi-key command in ``source`` whose keys may lie on two slots."""
    tree = ast.parse(source)
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for pipe, block in _transaction_pipes(node):
                keys = [
                    slot_of(k)
                    for call in ast.walk(block)
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == pipe
                    for k in _keys(call)
                ]
                if len(set(keys)) > 1:
                    problems.append(f"line {node.lineno}: a transaction over {sorted(set(keys))}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            ALL_KEYS | {"xread", "blpop"}
        ):
            keys = {slot_of(k) for k in _keys(node)}
            if len(keys) > 1:
                problems.append(f"line {node.lineno}: {node.func.attr} over {sorted(keys)}")
    return problems


def test_no_transaction_or_multi_key_command_spans_two_slots():
    found = {
        str(path.relative_to(ROOT)): problems
        for path in sorted((ROOT / "pmsearch").rglob("*.py"))
        if (problems := spanning(path.read_text()))
    }
    assert found == {}


def test_a_transaction_over_two_unrelated_keys_is_reported():
    source = '''
async def admit(redis, meta):
    async with redis.pipeline(transaction=True) as pipe:
        pipe.set(streams.meta_key(meta.run_id), "x")
        pipe.zadd(streams.WATCHDOG, {meta.run_id: 1})
        await pipe.execute()
'''
    assert spanning(source) == ["line 3: a transaction over ['streams.WATCHDOG', 'the run meta.run_id']"]


def test_a_run_s_own_keys_in_one_transaction_pass():
    source = '''
async def finish(redis, run_id, key):
    async with redis.pipeline(transaction=True) as pipe:
        await pipe.watch(streams.final_key(run_id))
        pipe.multi()
        pipe.set(streams.final_key(run_id), "x")
        pipe.xadd(streams.progress_key(run_id), {"e": "done"})
        await pipe.execute()
'''
    assert spanning(source) == []


def test_a_multi_key_command_over_two_slots_is_reported():
    assert spanning("redis.delete(streams.meta_key(a), streams.WATCHDOG)\n") == [
        "line 1: delete over ['streams.WATCHDOG', 'the run a']"
    ]
