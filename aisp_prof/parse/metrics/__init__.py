"""What an ncu metric means: the name -> tidy column table, units, and the counts an export
holds only as rates or sectors."""
