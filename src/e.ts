evil=1
