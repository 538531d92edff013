"""What the numbers of a run mean, in sentences: the verdict rules, the checks that withhold a
headline (`validity`), the headline itself and the verdict's text."""
