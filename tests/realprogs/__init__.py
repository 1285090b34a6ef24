# SPDX-License-Identifier: LGPL-2.1-or-later
"""Unmodified Debian programs through two checkpoint -> kill -> restart
cycles each, compared with a native run (driver.py)."""
