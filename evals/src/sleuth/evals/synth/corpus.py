"""A generated contracts corpus and its golden set, deterministic for a seed.

``sleuth eval synth-corpus --out DIR [--documents 2000 --questions 300 --seed 7]`` writes
``DIR/docs/*.md`` (markdown with front matter, what ``sleuth ingest DIR/docs`` reads) and
``DIR/golden.jsonl`` with its frozen manifest. The same arguments give the same bytes (but for the
manifest's creation time).

The corpus is built to make retrieval configurations differ:

- **supply agreements** (about 45 %, one per provider): the same clause types recur (payment 5.2,
  price revision 7.1, late delivery 8.3, liability 9.2, confidentiality 11.1, termination 12.1)
  in several wordings, with numbers drawn per contract, among boilerplate sections. Providers
  share name parts (*Norvik Logistics*, *Norvik Freight*), and a clause never names its
  provider: only the document's title does;
- **amendments** (10 %) replacing a contract's late-delivery clause: near-duplicates of it;
- **standard purchase terms** (5 %), versions of one boilerplate text that talks about the same
  subjects with no numbers;
- **policies and other domains** (the rest): travel, returns, IT security, remote work, minutes,
  a maintenance manual, menus, release notes, in several editions.

Every question is made from the corpus, so what answers it is known by construction: each case's
``reference_evidence`` names the sentence(s) and the document(s) that hold the answer
(:mod:`sleuth.scoring.retrieval` matches them whatever the chunking), and
``reference_context_ids`` the documents. Strata: ``easy`` (one clause of one named provider),
``multi-hop`` (two providers compared, or a clause and its amendment), ``adversarial`` (a false
premise — the evidence is the clause that refutes it — or a provider that does not exist —
nothing to find). Splits come from the question's hash (30 % test).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.core.jsonl import dump_jsonl
from sleuth.evals.golden.cases import NOT_ENOUGH_INFORMATION, Evidence, GoldenCase
from sleuth.evals.golden.manifest import freeze
from sleuth.evals.splits import content_hash, split_for
from sleuth.evals.synth import vocabulary as v
from sleuth.scoring.samples import Stratum


@dataclass
class Contract:
    id: str
    provider: str
    year: int
    city: str
    clauses: dict[str, str] = field(default_factory=dict)
    """clause number → the sentence that holds its terms (the evidence)."""
    params: dict[str, Any] = field(default_factory=dict)
    amendment: tuple[str, str] | None = None
    """(document id, sentence) of the amendment replacing clause 8.3."""


@dataclass
class Doc:
    id: str
    title: str
    body: str
    meta: dict[str, str]

    def markdown(self) -> str:
        front = "\n".join(f"{k}: {json.dumps(val)}" for k, val in self.meta.items())
        head = f"---\nid: {self.id}\ntitle: {json.dumps(self.title)}\n{front}\n---\n"
        return f"{head}# {self.title}\n\n{self.body}\n"


_TITLES = {
    "5.2": "Payment terms",
    "7.1": "Price revision",
    "8.3": "Late delivery",
    "9.2": "Limitation of liability",
    "11.1": "Confidentiality",
    "12.1": "Termination",
}


def _contract(rng: random.Random, index: int, provider: str) -> tuple[Contract, Doc]:
    c = Contract(
        id=f"contract-{index:05d}",
        provider=provider,
        year=rng.choice((2023, 2024, 2025, 2026)),
        city=rng.choice(v.CITIES),
    )
    p = c.params
    p.update(
        days=rng.choice((30, 45, 60, 90)),
        rate=rng.choice((0.5, 1, 1.5, 2, 3)),
        period=rng.choice(("week", "month")),
        cap=rng.choice((5, 10, 15, 20)),
        price_cap=rng.choice((2, 3, 4, 5)),
        multiple=rng.choice(("once", "twice", "three times")),
        years=rng.choice((2, 3, 5, 7)),
        months=rng.choice((3, 6, 12)),
    )
    c.clauses["5.2"] = rng.choice(v.PAYMENT).format(**p)
    if rng.random() < 0.6:
        c.clauses["7.1"] = rng.choice(v.PRICE).format(cap=p["price_cap"])
    if rng.random() < 0.85:
        c.clauses["8.3"] = rng.choice(v.LATE_DELIVERY).format(**p)
    c.clauses["9.2"] = rng.choice(v.LIABILITY).format(**p)
    c.clauses["11.1"] = rng.choice(v.CONFIDENTIALITY).format(**p)
    c.clauses["12.1"] = rng.choice(v.TERMINATION).format(**p)
    goods = rng.choice(v.GOODS)
    sections = [
        f"Agreement between the Company and {provider}, {c.city}, for the supply of {goods}, "
        f"signed in {c.year}. In this agreement {provider} is called the Provider.",
        "## 1. Scope\n\nThe Provider supplies the goods listed in each purchase order under the "
        "conditions below; purchase orders form part of this agreement.",
    ]
    boiler = rng.sample(v.BOILERPLATE, 2)
    for number, sentence in c.clauses.items():
        sections.append(f"## {number} {_TITLES[number]}\n\n{sentence}")
        if number == "9.2":
            sections.append(f"## 10. General\n\n{boiler[0]}")
    sections.append(f"## 13. Final provisions\n\n{boiler[1]}")
    region = "EU" if c.city in v.EU_CITIES else "non-EU"
    doc = Doc(
        id=c.id,
        title=f"Supply agreement with {provider} ({c.year})",
        body="\n\n".join(sections),
        meta={"type": "contract", "provider": provider, "year": str(c.year), "region": region},
    )
    return c, doc


def _amendment(rng: random.Random, index: int, c: Contract) -> Doc:
    new_rate = rng.choice([r for r in (0.5, 1, 1.5, 2, 3, 4) if r != c.params["rate"]])
    sentence = (
        f"With effect from 1 July {c.year + 1}, clause 8.3 of the supply agreement with "
        f"{c.provider} is replaced: the penalty for late delivery is {new_rate}% of the invoiced "
        f"amount per {c.params['period']} of delay, capped at {c.params['cap']}%."
    )
    doc_id = f"amendment-{index:05d}"
    c.amendment = (doc_id, sentence)
    c.params["new_rate"] = new_rate
    body = (
        f"{sentence}\n\nAll other clauses of the agreement remain unchanged. This amendment is "
        "signed by both parties and forms part of the agreement."
    )
    return Doc(
        doc_id,
        f"Amendment No. 1 to the supply agreement with {c.provider}",
        body,
        {"type": "amendment", "provider": c.provider, "year": str(c.year + 1)},
    )


def _other(rng: random.Random, index: int, kind: str) -> Doc:
    if kind == "terms":
        version = f"{rng.randint(1, 9)}.{rng.randint(0, 9)}"
        body = (
            "## 5 Payment\n\nInvoices are paid as stated in the purchase order.\n\n"
            "## 8 Late delivery\n\nIf the supplier delivers late, the buyer may claim the "
            "penalty agreed in the order, or cancel the order after a reminder.\n\n"
            "## 9 Liability\n\nLiability follows the framework agreement, where there is one."
        )
        return Doc(
            f"terms-{index:05d}",
            f"Standard purchase terms, version {version}",
            body,
            {"type": "terms"},
        )
    title, text = rng.choice(v.POLICY_TOPICS if kind == "policy" else v.OTHER_TOPICS)
    params = {
        "amount": rng.randint(5, 400),
        "hours": rng.randint(2, 14),
        "days": rng.randint(7, 90),
        "date": f"{rng.randint(1, 28)} {rng.choice(('March', 'June', 'October'))}",
    }
    edition = rng.choice((2022, 2023, 2024, 2025))
    return Doc(
        f"{kind}-{index:05d}",
        f"{title} ({edition} edition)",
        text.format(**params),
        {"type": kind, "year": str(edition)},
    )


def _case(
    question: str, reference: str, evidence: list[tuple[str, str]], stratum: Stratum
) -> GoldenCase:
    return GoldenCase(
        id="s-" + content_hash(question)[:10],
        question=question,
        reference=reference,
        reference_context_ids=sorted({d for d, _ in evidence}),
        reference_evidence=[Evidence(document_id=d, text=t) for d, t in evidence],
        stratum=stratum,
        split=split_for(question, 30),
        origin="synthetic",
        review="accepted",
    )


EASY = {
    "8.3": (
        "What late-delivery penalty applies in the contract with {P}?",
        "How much does {P} owe when its goods arrive late?",
        "What are the liquidated damages for delay under the {P} agreement?",
    ),
    "5.2": (
        "Within how many days are invoices from {P} paid?",
        "What are the payment terms in the contract with {P}?",
    ),
    "7.1": ("How are prices revised in the agreement with {P}?",),
    "9.2": ("How is liability limited in the contract with {P}?",),
    "11.1": ("For how long must information exchanged with {P} stay confidential?",),
    "12.1": ("What notice is needed to end the agreement with {P}?",),
}


def _easy(rng: random.Random, c: Contract) -> GoldenCase:
    numbers = [n for n in EASY if n in c.clauses and not (n == "8.3" and c.amendment)]
    number = rng.choice(numbers)
    question = rng.choice(EASY[number]).format(P=c.provider)
    reference = f"Clause {number} of the agreement with {c.provider}: {c.clauses[number]}"
    return _case(question, reference, [(c.id, c.clauses[number])], "easy")


def _multi_hop(rng: random.Random, contracts: list[Contract]) -> GoldenCase:
    amended = [c for c in contracts if c.amendment]
    if amended and rng.random() < 0.5:
        c = rng.choice(amended)
        assert c.amendment is not None
        question = (
            f"What late-delivery penalty applies to {c.provider} now that its agreement has "
            "been amended?"
        )
        reference = (
            f"The amendment replaces clause 8.3: {c.params['new_rate']}% per "
            f"{c.params['period']} of delay instead of {c.params['rate']}%, capped at "
            f"{c.params['cap']}%."
        )
        evidence = [c.amendment, (c.id, c.clauses["8.3"])]
        return _case(question, reference, evidence, "multi-hop")
    a, b = rng.sample(contracts, 2)
    question = (
        f"Which contract pays invoices sooner, the one with {a.provider} or the one with "
        f"{b.provider}?"
    )
    da, db = a.params["days"], b.params["days"]
    first = a if da < db else b
    reference = f"{a.provider}: {da} days; {b.provider}: {db} days; " + (
        "the same." if da == db else f"{first.provider}'s is sooner."
    )
    return _case(
        question, reference, [(a.id, a.clauses["5.2"]), (b.id, b.clauses["5.2"])], "multi-hop"
    )


def _adversarial(rng: random.Random, contracts: list[Contract], unused: list[str]) -> GoldenCase:
    late = [c for c in contracts if "8.3" in c.clauses and not c.amendment]
    if late and rng.random() < 0.7:
        c = rng.choice(late)
        wrong = rng.choice((12, 15, 25))
        question = (
            f"Why does the contract with {c.provider} set a late-delivery penalty of {wrong}% "
            "per day?"
        )
        reference = (
            f"It does not: clause 8.3 of the agreement with {c.provider} says: {c.clauses['8.3']}"
        )
        return _case(question, reference, [(c.id, c.clauses["8.3"])], "adversarial")
    ghost = rng.choice(unused)
    question = f"What late-delivery penalty applies in the contract with {ghost}?"
    return _case(question, NOT_ENOUGH_INFORMATION, [], "adversarial")


def generate(
    documents: int = 2000, questions: int = 300, seed: int = 7
) -> tuple[list[Doc], list[GoldenCase]]:
    """The corpus and its golden cases (unique questions), for ``seed``."""
    if documents < 20:
        raise ValueError("--documents: at least 20")
    rng = random.Random(seed)
    names = [f"{p} {s}" for p in v.PREFIXES for s in v.SUFFIXES]
    rng.shuffle(names)
    n_contracts = min(int(documents * 0.45), len(names) - 20)
    providers, unused = names[:n_contracts], names[n_contracts:]
    docs: list[Doc] = []
    contracts: list[Contract] = []
    for i, provider in enumerate(providers):
        c, doc = _contract(rng, i, provider)
        contracts.append(c)
        docs.append(doc)
    candidates = [c for c in contracts if "8.3" in c.clauses]
    for i, c in enumerate(rng.sample(candidates, min(len(candidates), int(documents * 0.10)))):
        docs.append(_amendment(rng, i, c))
    n_terms = int(documents * 0.05)
    docs += [_other(rng, i, "terms") for i in range(n_terms)]
    rest = documents - len(docs)
    docs += [_other(rng, i, "policy" if i % 2 else "other") for i in range(rest)]
    cases: dict[str, GoldenCase] = {}
    makers: list[tuple[float, Callable[[], GoldenCase]]] = [
        (0.55, lambda: _easy(rng, rng.choice(contracts))),
        (0.25, lambda: _multi_hop(rng, contracts)),
        (0.20, lambda: _adversarial(rng, contracts, unused)),
    ]
    for share, make in makers:
        target = len(cases) + round(questions * share)
        for _ in range(questions * 20):
            if len(cases) >= target:
                break
            case = make()
            cases.setdefault(case.id, case)
    return docs, sorted(cases.values(), key=lambda c: c.id)


def write_corpus(
    out: Path, *, documents: int = 2000, questions: int = 300, seed: int = 7
) -> dict[str, Any]:
    """Write ``out/docs/*.md`` and ``out/golden.jsonl`` (frozen); return counts."""
    docs, cases = generate(documents, questions, seed)
    folder = out / "docs"
    folder.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        (folder / f"{doc.id}.md").write_text(doc.markdown(), encoding="utf-8")
    golden = out / "golden.jsonl"
    dump_jsonl(cases, golden)
    freeze(cases, golden)
    kinds: dict[str, int] = {}
    for doc in docs:
        kinds[doc.meta["type"]] = kinds.get(doc.meta["type"], 0) + 1
    strata = {
        s: sum(1 for c in cases if c.stratum == s) for s in ("easy", "multi-hop", "adversarial")
    }
    splits = {s: sum(1 for c in cases if c.split == s) for s in ("dev", "test")}
    return {
        "docs": str(folder),
        "golden": str(golden),
        "documents": kinds,
        "cases": len(cases),
        "strata": strata,
        "splits": splits,
        "seed": seed,
    }
