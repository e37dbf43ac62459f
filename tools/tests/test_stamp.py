"""Stamps: a stable digest, a whole write, a missing or corrupt stamp not up to date (stamp.py)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from cpuhpk import stamp


class DigestTest(unittest.TestCase):
    def test_equal_values_digest_the_same(self) -> None:
        self.assertEqual(stamp.digest({'a': 1, 'b': [1, 'x']}),
                         stamp.digest({'b': [1, 'x'], 'a': 1}))
        self.assertEqual(stamp.digest({'a': 1}), stamp.digest({'a': 1}))

    def test_any_change_digests_otherwise(self) -> None:
        base = {'job': ['make', 'run'], 'files': [['a.c', None]]}
        for other in ({'job': ['make', 'run', 'KVER=6.1'], 'files': [['a.c', None]]},
                      {'job': ['make', 'run'], 'files': [['a.c', 'sha']]},
                      {'job': ['make run'], 'files': [['a.c', None]]},
                      {'job': ['make', 'run'], 'files': [['a.c', None]], 'env': {}}):
            self.assertNotEqual(stamp.digest(base), stamp.digest(other), other)

    def test_the_digest_is_fixed(self) -> None:
        # A stamp is read by later runs: the digest is sha256 of the sorted
        # JSON, with no per-process salt (hash() has one).
        self.assertEqual(stamp.digest({'b': 2, 'a': [1]}),
                         hashlib.sha256(b'{"a": [1], "b": 2}').hexdigest())
        self.assertEqual(stamp.digest({'b': 2, 'a': [1]}),
                         'b5ae5c880a6fcd5909628dbf70774b76da84c70462f000f9840bded47d08dc80')


class FingerprintTest(unittest.TestCase):
    def test_the_fingerprint_is_fixed(self) -> None:
        # The cached trees hold fingerprints of their series, the build
        # directories of their sources: the same files must give the same.
        with tempfile.TemporaryDirectory() as d:
            a, b = Path(d) / 'a.patch', Path(d) / 'b.patch'
            a.write_text('A\n')
            b.write_text('B\n')
            self.assertEqual(stamp.fingerprint([a, b], 'fixes'), hashlib.sha256(
                b'fixes' b'a.patch\0A\n\0' b'b.patch\0B\n\0').hexdigest())
            self.assertEqual(stamp.fingerprint([]), hashlib.sha256(b'').hexdigest())
            self.assertNotEqual(stamp.fingerprint([a, b]), stamp.fingerprint([b, a]))
            b.write_text('B2\n')
            self.assertNotEqual(stamp.fingerprint([a, b], 'fixes'), hashlib.sha256(
                b'fixes' b'a.patch\0A\n\0' b'b.patch\0B\n\0').hexdigest())


class StampFileTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = Path(tmp.name)
        self.path = self.dir / 'cpuhp-kunit-build.json'

    def test_written_then_read_back(self) -> None:
        stamp.write(self.path, {'inputs': 'x', 'kernel': [1, 2, 'c']})
        self.assertEqual(stamp.read(self.path), {'inputs': 'x', 'kernel': [1, 2, 'c']})
        self.assertEqual(self.path.read_text(), '{"inputs": "x", "kernel": [1, 2, "c"]}\n')
        stamp.write_text(self.path, 'fp head')
        self.assertEqual(stamp.read_text(self.path), 'fp head')
        self.assertEqual(os.listdir(self.dir), [self.path.name])    # no temporary file left

    def test_a_failed_write_keeps_the_old_stamp_whole(self) -> None:
        stamp.write(self.path, {'digest': 'old'})
        with mock.patch.object(os, 'replace', side_effect=OSError('disk full')):
            with self.assertRaises(OSError):
                stamp.write(self.path, {'digest': 'new'})
        self.assertEqual(stamp.read(self.path), {'digest': 'old'})
        self.assertEqual(os.listdir(self.dir), [self.path.name])

    def test_the_new_stamp_replaces_the_old_one_whole(self) -> None:
        stamp.write_text(self.path, 'a much longer old stamp\n')
        stamp.write_text(self.path, 'new')
        self.assertEqual(self.path.read_text(), 'new')

    def test_missing_or_corrupt_reads_as_none(self) -> None:
        self.assertIsNone(stamp.read(self.path))
        self.assertIsNone(stamp.read_text(self.path))
        for corrupt in (b'{"inputs": "x", "ker', b'', b'["a list"]', b'null', b'\xff\xfe{}'):
            self.path.write_bytes(corrupt)
            self.assertIsNone(stamp.read(self.path), corrupt)
        self.assertIsNone(stamp.read_text(self.path))                 # not UTF-8
        self.path.unlink()
        self.path.mkdir()
        self.assertIsNone(stamp.read(self.path))
        self.assertIsNone(stamp.read_text(self.path))

    def test_forget(self) -> None:
        stamp.forget(self.path)                                       # none yet: fine
        stamp.write(self.path, {'digest': 'x'})
        stamp.forget(self.path)
        self.assertFalse(self.path.exists())
        self.assertIsNone(stamp.read(self.path))


if __name__ == '__main__':
    unittest.main()
