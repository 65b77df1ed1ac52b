"""Word lists and clause wordings of the generated contracts corpus (data, no logic)."""

from __future__ import annotations

PREFIXES = (
    "Norvik",
    "Altamira",
    "Brightwell",
    "Calder",
    "Dunmore",
    "Estrel",
    "Fenwick",
    "Galloway",
    "Harrow",
    "Ilvane",
    "Jarrow",
    "Kestrel",
    "Lindqvist",
    "Marlow",
    "Nordale",
    "Oakridge",
    "Pellham",
    "Quarry",
    "Rosslyn",
    "Stenholt",
    "Tamsin",
    "Ulvik",
    "Varden",
    "Westmark",
    "Yarrow",
    "Zelenka",
    "Ashby",
    "Bramwell",
    "Corvina",
    "Delmar",
    "Elstow",
    "Farrow",
    "Greystone",
    "Holloway",
    "Ironvale",
    "Juniper",
    "Kelso",
    "Larkspur",
    "Merriton",
    "Northcote",
    "Orvieto",
    "Penrose",
    "Quinlan",
    "Ravensworth",
    "Saltmarsh",
    "Thornbury",
    "Upland",
    "Verity",
    "Whitcombe",
    "Aldene",
)
SUFFIXES = (
    "Logistics",
    "Freight",
    "Foods",
    "Systems",
    "Metals",
    "Textiles",
    "Labs",
    "Energy",
    "Components",
    "Packaging",
    "Pharma",
    "Robotics",
    "Timber",
    "Plastics",
    "Electronics",
)
CITIES = (
    "Lyon",
    "Porto",
    "Gdansk",
    "Ghent",
    "Turin",
    "Aarhus",
    "Graz",
    "Leipzig",
    "Bilbao",
    "Tallinn",
    "Oslo",
    "Zurich",
    "Leeds",
)
EU_CITIES = frozenset(
    ("Lyon", "Porto", "Gdansk", "Ghent", "Turin", "Aarhus", "Graz", "Leipzig", "Bilbao", "Tallinn")
)
GOODS = (
    "steel fasteners",
    "corrugated packaging",
    "frozen vegetables",
    "printed circuit boards",
    "industrial solvents",
    "cotton fabric",
    "laboratory reagents",
    "pallet racking",
    "hydraulic pumps",
    "office furniture",
)

# Clause wordings: several per clause, so that recurring clauses vary as they do in real
# contracts. {p} is "the Provider"; the numbers are drawn per contract.
LATE_DELIVERY = (
    "If a delivery arrives after the agreed date, the Provider pays a penalty of {rate}% of the "
    "invoiced amount for each {period} of delay, capped at {cap}% of that amount.",
    "Late delivery: for every {period} of delay the Provider owes liquidated damages of {rate}% "
    "of the value of the late goods, up to {cap}% of that value.",
    "Where goods are delivered late, a penalty of {rate}% per {period} of delay applies to the "
    "invoiced amount, limited to {cap}% in total.",
)
PAYMENT = (
    "Invoices are paid by bank transfer within {days} days of receipt.",
    "Payment falls due {days} days after the date of a correct invoice.",
    "The Company settles undisputed invoices within {days} days.",
)
PRICE = (
    "Prices are revised every January in line with the consumer price index, capped at {cap}% "
    "per year.",
    "Once a year the parties may index prices to inflation; an increase may not exceed {cap}%.",
)
LIABILITY = (
    "Each party's aggregate liability is limited to {multiple} the fees paid in the twelve "
    "months preceding the claim.",
    "Liability of either party is capped at {multiple} the annual contract value, except for "
    "wilful misconduct.",
)
CONFIDENTIALITY = (
    "Both parties keep information exchanged under this agreement confidential for {years} "
    "years after it ends.",
    "Confidential information may not be disclosed to third parties for {years} years after "
    "termination.",
)
TERMINATION = (
    "Either party may terminate this agreement with {months} months' written notice.",
    "The agreement may be ended by either party on {months} months' notice in writing.",
)
BOILERPLATE = (
    "This agreement is governed by the laws of the country where the Company has its "
    "registered office. Disputes go to the competent courts of that place.",
    "Notices are given in writing to the addresses stated above. Neither party may assign this "
    "agreement without the other's consent.",
    "Force majeure suspends the obligations of the party affected for as long as it lasts, "
    "provided the other party is told without delay.",
    "The Provider keeps insurance covering its liability under this agreement and shows proof "
    "of it on request.",
)

POLICY_TOPICS = (
    (
        "Travel and expenses policy",
        "Hotel costs are reimbursed up to {amount} euros per night. Economy class is the rule "
        "for flights under {hours} hours. Expense reports are filed within {days} days.",
    ),
    (
        "Returns policy",
        "Customers may return unused products within {days} days of delivery. Refunds go to the "
        "original payment method within {hours} days.",
    ),
    (
        "IT security policy",
        "Passwords have at least {hours} characters and are changed every {days} days. Laptops "
        "lock after {amount} seconds without use.",
    ),
    (
        "Remote work policy",
        "Staff may work remotely up to {hours} days a week. Equipment allowance is {amount} "
        "euros per year. Core hours are announced {days} days in advance.",
    ),
)
OTHER_TOPICS = (
    (
        "Meeting minutes",
        "The steering group met on {date}. Attendance: {hours} members. The budget review moved "
        "to the next quarter; {amount} euros were reallocated to maintenance. Action items are "
        "due in {days} days.",
    ),
    (
        "Pump maintenance manual",
        "Inspect the seals every {days} days. Replace the filter after {hours} hours of "
        "operation. Torque the flange bolts to {amount} newton metres.",
    ),
    (
        "Canteen menu",
        "Soup of the day costs {amount} cents. The salad bar opens at {hours} o'clock. Menus "
        "rotate every {days} days.",
    ),
    (
        "Release notes",
        "Version {hours}.{days} fixes {amount} defects in the reporting module and speeds up "
        "the export of invoices.",
    ),
)
