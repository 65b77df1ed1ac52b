"""The seed question scripted for a model: its two tool rounds and the answer it composes.

The rules answer only once the real evidence is in the model's context (they match on the
observations), so a broken tool path cannot produce the answer. Used by the tools' end-to-end
test on this host and by the model pod of the real-node platform test.
"""

from __future__ import annotations

from sleuth.scripted import Match, Rule, ScriptedResponse
from sleuth.scripted import ScriptedToolCall as Call
from sleuth.tools.sample.contracts import SEED_PARAMS, SEED_SEARCH, SEED_SQL

SEED_ANSWER = (
    "In 2025 you signed 47 contracts with EU providers above 100,000 €, 8.3 M€ in total "
    "[sql:contracts]. The recurring special condition is the late-delivery penalty of clause "
    "8.3, 2% per month on the invoiced amount (Provider A and Provider B) "
    "[contract-provider-a-2025#0][contract-provider-b-2025#0]; the CPI price revision capped "
    "at 4% per year (clause 7.1) applies to Provider C [contract-provider-c-2025#0]."
)


def seed_rules() -> list[Rule]:
    """sql_query with the seed's named parameters, then vector_search, then the answer."""
    return [
        Rule(
            match=Match(position=0, last_message_contains="100k€"),
            response=ScriptedResponse(
                tool_calls=[
                    Call(
                        name="sql_query", arguments={"query": SEED_SQL, "params": list(SEED_PARAMS)}
                    )
                ]
            ),
        ),
        Rule(
            match=Match(position=1, last_message_contains='"num_contracts": 47'),
            response=ScriptedResponse(
                tool_calls=[
                    Call(name="vector_search", arguments={"query": SEED_SEARCH, "top_k": 5})
                ]
            ),
        ),
        Rule(
            match=Match(position=2, last_message_contains="Clause 8.3"),
            response=ScriptedResponse(content=SEED_ANSWER),
        ),
    ]
