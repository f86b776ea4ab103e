"""What a run reports: failure sections, summary, JUnit, JSON, the HTML page, diffs of reports."""
