"""The calendar's names: months and weekdays in the languages mail to a European business
arrives in (English, German, French, Spanish, Italian, Dutch), with their common
abbreviations. Every table of month or day names in pmsearch is built from these.
"""

from __future__ import annotations

# Per language, the twelve months' full names, in order.
MONTH_NAMES: dict[str, tuple[str, ...]] = {
    "en": ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"),
    "de": ("januar", "februar", "märz", "april", "mai", "juni", "juli", "august", "september", "oktober",
           "november", "dezember"),
    "fr": ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre",
           "novembre", "décembre"),
    "es": ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
           "noviembre", "diciembre"),
    "it": ("gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre",
           "ottobre", "novembre", "dicembre"),
    "nl": ("januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september", "oktober",
           "november", "december"),
}
# Abbreviations and spellings beside the full names (without diacritics, Austrian
# "Jänner"), each with its month's number.
MONTH_ABBREVIATIONS: dict[str, tuple[tuple[str, int], ...]] = {
    "en": (("jan", 1), ("feb", 2), ("mar", 3), ("apr", 4), ("jun", 6), ("jul", 7), ("aug", 8), ("sep", 9),
           ("sept", 9), ("oct", 10), ("nov", 11), ("dec", 12)),
    "de": (("jänner", 1), ("maerz", 3), ("okt", 10), ("dez", 12)),
    "fr": (("fevrier", 2), ("aout", 8), ("decembre", 12)),
}
# Per language, the seven weekdays' names, Monday first.
WEEKDAY_NAMES: dict[str, tuple[str, ...]] = {
    "en": ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    "de": ("montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag"),
    "fr": ("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"),
}
# Other names of a weekday, with its number (Monday 0).
WEEKDAY_OTHER_NAMES: dict[str, tuple[tuple[str, int], ...]] = {
    "en": (("mon", 0), ("tue", 1), ("tues", 1), ("wed", 2), ("thu", 3), ("thurs", 3), ("fri", 4), ("sat", 5),
           ("sun", 6)),
    "de": (("sonnabend", 5),),
}


def month_numbers(*languages: str, abbreviations: bool = True) -> dict[str, int]:
    """Every month name of ``languages`` (all when none is given), lower case, with its
    number (January 1)."""
    chosen = languages or tuple(MONTH_NAMES)
    numbers: dict[str, int] = {}
    for language in chosen:
        numbers.update((name, n) for n, name in enumerate(MONTH_NAMES[language], 1))
        if abbreviations:
            numbers.update(MONTH_ABBREVIATIONS.get(language, ()))
    return numbers


def weekday_numbers(*languages: str, abbreviations: bool = True) -> dict[str, int]:
    """Every weekday name of ``languages`` (all when none is given), lower case, with its
    number (Monday 0)."""
    chosen = languages or tuple(WEEKDAY_NAMES)
    numbers: dict[str, int] = {}
    for language in chosen:
        numbers.update((name, n) for n, name in enumerate(WEEKDAY_NAMES[language]))
        if abbreviations:
            numbers.update(WEEKDAY_OTHER_NAMES.get(language, ()))
    return numbers


# Every month name the figures reader knows: only beside a day or a year do they read as
# a date, so "mars" or "mayo" alone is no month.
MONTHS: dict[str, int] = month_numbers()
