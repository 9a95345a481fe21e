"""Speed benchmarks of the claim passes and single-claim calls (run with ``scripts/bench``).

Every figure is measured side by side with a hand-written baseline in the same run
and printed as a ratio, because this machine is shared and absolute times are noisy.
All data goes to a throwaway test database that the run creates and drops.
"""
