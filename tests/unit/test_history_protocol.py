"""Every history a reader opens answers the one declared History (commcheck.results.history),
and every series its Series: the results database, the shared store, and their series."""

from __future__ import annotations

import pytest

from commcheck.results import history, pgread, sample_index, source


@pytest.mark.parametrize('reader, protocol', [
    (source.LocalHistory, history.History), (pgread.StoreHistory, history.History),
    (sample_index.SampleIndex, history.Series), (pgread.StoreSeries, history.Series)])
def test_each_reader_answers_its_protocol(reader, protocol):
    assert list(history.iter_missing(reader, protocol)) == []


def test_the_protocols_declare_what_the_readers_use():
    assert history.members(history.History) == [
        '__enter__', '__exit__', 'archive', 'choose', 'close', 'fetcher', 'has_series', 'listing',
        'load', 'records', 'resolve', 'series', 'stored', 'where', 'with_check']
    assert history.members(history.Series) == ['close', 'keys', 'launches', 'reopened',
                                               'sessions', 'warn']


def test_a_reader_lacking_a_member_is_found():
    class Half:
        where = ''

        def stored(self):
            return []
    assert 'listing' in list(history.iter_missing(Half, history.History))


def test_an_open_history_is_opened_as_is(tmp_path):
    opened = object()
    assert source.open_history(opened) is opened


def test_the_store_address_is_option_then_environment_then_site_file(monkeypatch):
    from commcheck.results import pgstore
    read = []

    def site():
        read.append(1)
        return 'postgresql://reader@site/commcheck'
    monkeypatch.setenv('COMMCHECK_HISTORY', 'postgresql://reader@env/commcheck')
    assert pgstore.store_address('postgresql://reader@opt/commcheck', site) == \
        'postgresql://reader@opt/commcheck'
    assert pgstore.store_address(None, site) == 'postgresql://reader@env/commcheck'
    assert read == []                         # the site file is read only when needed
    monkeypatch.delenv('COMMCHECK_HISTORY')
    assert pgstore.store_address(None, site) == 'postgresql://reader@site/commcheck'
    monkeypatch.setenv('COMMCHECK_SITE', 'local')
    assert pgstore.store_address() is None and source.configured() is None
    with pytest.raises(pgstore.StoreRefused, match='contains a password'):
        pgstore.store_address(None, lambda: 'postgresql://u:secret@h/db')
