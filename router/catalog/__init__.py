"""Function definitions and their validation, request limits, and the records of what is stored."""
