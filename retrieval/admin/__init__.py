"""Admin of the retrieval app, one module per concern; importing the package registers every page.

- searches.py: the searches audit (refused true/false/null, collection, agent and date filters, the trace)
- golden.py: golden questions per collection (import, export, evaluate, measure); golden_forms.py: its forms
- evaluations.py: evaluations, with a row per question
- editors_only.py: the base of the pages only the tenant's editors and admins read
- measure.py: measures, their result page (table, charts) and "Apply this variant"
- gaps.py: the questions of a collection nobody could answer, with try, add as golden question and dismiss
- judges_and_costs.py: collections' judges (editors) and model calls per agent per day (the tenant's admins)
"""

from retrieval.admin import evaluations, gaps, golden, judges_and_costs, measure, searches  # noqa: F401  (registers the pages)
