"""unicode_words and cjk_token_counter: the rules of the opt-in reader, one by one.

Only characters assigned in Unicode 13.0 (Python 3.9's tables) are used.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core.multilingual import _CJK_CHAR, _CJK_RUN, cjk_token_counter, unicode_words
from poolsplit_core.poolsplit import default_token_counter
from tests.core.multilingual_fixtures import FIXTURES
from tests.reference import words as ascii_reference_words

# Golden examples of a well-known CJK bigram analyzer (its documented outputs).
GOLDEN = [
    ("東京都は、日本の首都であり",
     {"東京", "京都", "都は", "日本", "本の", "の首", "首都", "都で", "であ", "あり"}),
    ("我是中国人", {"我是", "是中", "中国", "国人"}),
    ("多くの学生が試験に落ちた。",
     {"多く", "くの", "の学", "学生", "生が", "が試", "試験", "験に", "に落", "落ち", "ちた"}),
    ("一二三四五六七八九十一二三四五六七八九十",
     {"一二", "二三", "三四", "四五", "五六", "六七", "七八", "八九", "九十", "十一"}),
]


@pytest.mark.parametrize(("text", "expected"), GOLDEN)
def test_cjk_runs_give_the_golden_overlapping_bigrams(text, expected):
    assert unicode_words(text) == expected


def test_a_cjk_run_of_one_character_is_that_character():
    assert unicode_words("买 a 书") == {"买", "书"}
    assert unicode_words("猫") == {"猫"}


def test_a_run_ends_where_the_script_changes():
    assert unicode_words("GitHub备份") == {"github", "备份"}
    assert unicode_words("备份GitHub") == {"备份", "github"}
    assert unicode_words("Москваcity") == {"москва", "city"}
    assert unicode_words("2024年") == {"2024", "年"}


def test_the_fold_is_nfkc_casefold_nfkc():
    assert unicode_words("ＡＢＣ１２３") == {"abc123"}
    assert unicode_words("Straße") == unicode_words("STRASSE") == {"strasse"}
    assert unicode_words("ｶﾀｶﾅ") == unicode_words("カタカナ") == {"カタ", "タカ", "カナ"}
    assert unicode_words("ｶﾞｲﾄﾞ") == unicode_words("ガイド")  # voiced marks compose
    assert unicode_words("CAFÉ") == unicode_words("cafe\u0301") == {"café"}


def test_format_characters_and_variation_selectors_are_dropped_not_split_on():
    assert unicode_words("数\u200b据库") == {"数据", "据库"}  # zero-width space
    assert unicode_words("mi\u00adgra\u00adtion") == {"migration"}  # soft hyphens
    assert unicode_words("葛\U000e0100城") == {"葛城"}  # an ideographic variation selector
    assert unicode_words("back\ufe0fup") == {"backup"}


def test_marks_stay_inside_their_word():
    # Devanagari vowel signs and the virama are marks: the word stays whole.
    assert unicode_words("हिन्दी") == {"हिन्दी"}
    assert unicode_words("தமிழ்நாடு") == {"தமிழ்நாடு"}


def test_alphabetic_words_keep_the_length_and_stopword_rule():
    assert unicode_words("на the café") == {"café"}  # "на": 2 characters; "the": a stopword
    assert unicode_words("THE Über") == {"über"}


def test_punctuation_and_symbols_of_every_script_separate():
    assert unicode_words("数据库。迁移！") == {"数据", "据库", "迁移"}
    assert unicode_words("「備份」・確認") == {"備份", "確認"}
    assert unicode_words("¿Qué?—sí, señor") == {"qué", "señor"}


@pytest.mark.parametrize("lang", sorted(FIXTURES))
def test_each_language_fixture_reads_the_expected_words(lang):
    assert unicode_words(FIXTURES[lang]["message"]) == FIXTURES[lang]["words"]


def test_the_reader_returns_a_frozenset_of_str():
    got = unicode_words("東京 Straße")
    assert type(got) is frozenset and all(type(word) is str for word in got)


@given(st.text(st.characters(max_codepoint=127)))
def test_for_ascii_text_it_gives_exactly_the_default_words(text):
    assert unicode_words(text) == ascii_reference_words(text)


# An alphabet of characters assigned in Unicode 13.0: ASCII, punctuation of
# several scripts, and the letters of the fixtures.
ALPHABET = sorted(set(
    "abcXYZ019 _-.,!?\t\n" "、。「」・！？ \u200b\u00ad\ufe0f"
    + "".join(f["message"] + f["match"] + "".join(f["others"]) for f in FIXTURES.values())))
mixed = st.text(st.sampled_from(ALPHABET), max_size=40)


@given(mixed, mixed)
def test_words_of_a_join_at_a_separator_are_the_union(left, right):
    # Words never span a space: reading two texts apart or joined is the same.
    assert unicode_words(left + " " + right) == unicode_words(left) | unicode_words(right)


@given(mixed)
def test_every_word_is_a_cjk_bigram_or_single_or_a_long_alphabetic_run(text):
    for word in unicode_words(text):
        assert word and not any(ch.isspace() for ch in word)
        assert len(word) > 2 or _CJK_RUN.fullmatch(word), word


def test_cjk_token_counter_counts_cjk_characters_as_one_token_each():
    assert cjk_token_counter("数据库迁移" * 80) == 400  # default_token_counter says 100
    assert default_token_counter("数据库迁移" * 80) == 100
    assert cjk_token_counter("東京、日本") == 5  # CJK punctuation counts too
    assert cjk_token_counter("迁移 the invoices table") == 2 + 19 // 4


@given(st.text(st.characters(max_codepoint=127)))
def test_cjk_token_counter_is_the_default_counter_on_ascii(text):
    assert cjk_token_counter(text) == default_token_counter(text)


@given(st.text(st.sampled_from([*ALPHABET, "\u3000", "\uff01", "\uffe5", "\U00020000"]),
               max_size=60))
def test_cjk_token_counter_counts_each_cjk_character_once(text):
    # The oracle looks at one character at a time; the counter reads whole runs of them.
    cjk = sum(1 for ch in text if _CJK_CHAR.fullmatch(ch))
    assert cjk_token_counter(text) == max(1, cjk + (len(text) - cjk) // 4)


@given(mixed)
def test_cjk_token_counter_is_a_positive_int(text):
    got = cjk_token_counter(text)
    assert type(got) is int and got >= 1


# Characters a Chinese, Japanese or Korean text is mostly made of: text of
# only these skips the fold. A trailing soft hyphen (dropped by the fold)
# forces the full path, which must read the same words.
UNFOLDED = ("abcz09 ,.!?-'\"" "\u2018\u2019\u201c\u201d"
            "\u3000\u3001\u3002\u300c\u300d\u3010\u3011"
            "\uff01\uff08\uff09\uff0c\uff1a\uff1b\uff1f"
            "数据库迁移东京都はのであカタナーガ회의자료")


@given(st.text(st.sampled_from(UNFOLDED), max_size=40))
def test_text_that_folds_alike_reads_the_same_words_with_or_without_the_fold(text):
    assert unicode_words(text) == unicode_words(text + "\u00ad")
