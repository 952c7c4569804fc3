print("sqlclient: not built yet")
