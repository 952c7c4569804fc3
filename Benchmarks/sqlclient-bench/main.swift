print("sqlclient-bench: not built yet")
