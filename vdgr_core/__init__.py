"""VDGR query module and the Beam-free logic shared with indexing.

Importing this package never imports apache_beam.
"""
__version__ = "0.1.0"
