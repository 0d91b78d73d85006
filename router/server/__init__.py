"""The router process: its settings, runtime (storage, models, writer, worker), metrics and logs."""
