"""The privacy ledger and each person's charges."""
