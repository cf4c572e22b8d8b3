"""Helpers the tests share: imported by test modules of every tier, never a test module itself."""
