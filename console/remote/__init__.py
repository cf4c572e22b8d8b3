"""The console's network process and its proxy: cluster reads off the UI process."""
