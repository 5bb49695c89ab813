"""Run plumbing: starting and closing a run (suite), the tag vocabulary and its checks,
results, summaries, and the report and parallel commands."""
