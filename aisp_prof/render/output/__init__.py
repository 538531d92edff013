"""What the report writes besides its HTML: the folder's life on disk, the interactive SVGs."""
