"""What every layer shares: the error family and the text of chat messages."""
