"""The seed's sample data, shared by tests, evals and ``sleuth demo``.

- :mod:`sleuth.tools.sample.contracts`: a deterministic ``contracts`` table (and tables that must
stay
  out of reach) such that the seed's question has the seed's answer: 47 contracts above
  100,000 € signed in 2025 with EU providers, 8,300,000 € in total.
- :mod:`sleuth.tools.sample.documents`: contract clause documents (clause 8.3 for providers A and B,
  clause 7.1 for provider C), distractors and one prompt-injection document.
"""

from sleuth.tools.sample.contracts import (
    EXPECTED_COUNT,
    EXPECTED_TOTAL,
    SEED_PARAMS,
    SEED_QUESTION,
    SEED_SQL,
    ContractRow,
    contract_rows,
)
from sleuth.tools.sample.documents import DOCUMENTS, INJECTION_DOCUMENT_ID, SampleDocument

__all__ = [
    "DOCUMENTS",
    "EXPECTED_COUNT",
    "EXPECTED_TOTAL",
    "INJECTION_DOCUMENT_ID",
    "SEED_PARAMS",
    "SEED_QUESTION",
    "SEED_SQL",
    "ContractRow",
    "SampleDocument",
    "contract_rows",
]
