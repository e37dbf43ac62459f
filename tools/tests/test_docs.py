"""README.md and Documentation/: links between the pages resolve.

Every relative link of README.md and Documentation/**/*.md must name a file
or directory of the repository, and a '#anchor' into a Markdown page must
name one of its headings (as a forge makes anchors of headings). README
stays short: the detail lives in Documentation/.
"""

from __future__ import annotations

import re
import unittest
from pathlib import Path
from typing import List, Set, Tuple

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)')
CODE = re.compile(r'`[^`]*`')


def pages() -> List[Path]:
    return [REPO / 'README.md'] + sorted((REPO / 'Documentation').rglob('*.md'))


def anchors(page: Path) -> Set[str]:
    """The anchors a forge gives the headings of @page."""
    out: Set[str] = set()
    for line in page.read_text().splitlines():
        if line.startswith('#'):
            text = line.lstrip('#').strip().lower().replace('`', '')
            out.add(re.sub(r'[^\w\- ]', '', text).replace(' ', '-'))
    return out


def links(page: Path) -> List[Tuple[int, str]]:
    found: List[Tuple[int, str]] = []
    fenced = False
    for n, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith('    ') or line.startswith('```'):
            fenced = fenced != line.startswith('```')
            continue
        if fenced:
            continue
        for m in LINK.finditer(CODE.sub('', line)):
            found.append((n, m.group(1) or m.group(2)))
    return found


def broken(page: Path) -> List[str]:
    out = []
    for n, target in links(page):
        if re.match(r'[a-z]+:', target):
            continue        # http:, https:, mailto:
        path, _, anchor = target.partition('#')
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            out.append(f'{page.relative_to(REPO)}:{n}: {target}: no such file')
        elif anchor and dest.suffix == '.md' and anchor not in anchors(dest):
            out.append(f'{page.relative_to(REPO)}:{n}: {target}: no such heading')
    return out


class DocsTest(unittest.TestCase):
    def test_links_resolve(self) -> None:
        self.assertGreater(len(pages()), 10)
        self.assertEqual([b for p in pages() for b in broken(p)], [])

    def test_every_page_is_reachable_from_the_index(self) -> None:
        index = REPO / 'Documentation' / 'README.md'
        linked = {(index.parent / t.partition('#')[0]).resolve() for _, t in links(index)}
        findings = REPO / 'Documentation' / 'findings' / 'README.md'
        linked |= {(findings.parent / t.partition('#')[0]).resolve() for _, t in links(findings)}
        for page in pages()[1:]:
            if page.name != 'README.md':
                self.assertIn(page.resolve(), linked, f'{page} is linked from no index')

    def test_a_broken_link_is_found(self) -> None:
        tmp = REPO / 'Documentation' / '.test-broken-link.md'
        try:
            tmp.write_text('[x](no-such-page.md) [y](verdict.md#no-such-heading) [z](verdict.md)\n')
            self.assertEqual(len(broken(tmp)), 2)
        finally:
            tmp.unlink()

    def test_readme_is_short(self) -> None:
        self.assertLessEqual(len((REPO / 'README.md').read_text().splitlines()), 200)


if __name__ == '__main__':
    unittest.main()
