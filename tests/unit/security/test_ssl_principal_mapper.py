"""ssl.principal.mapping.rules read and applied as Kafka's SslPrincipalMapper does."""

from __future__ import annotations

import pytest

from kgroups.security.ssl_principal_mapper import InvalidRules, NoMatchingRule, SslPrincipalMapper


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=Staff.*$/$1/",
        "RULE:^CN=(.*?),OU=Staff.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        # Letters of L, U and DEFAULT inside a pattern are just letters.
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_rules_that_parse(rules: str) -> None:
    SslPrincipalMapper(rules)


@pytest.mark.parametrize(
    "rules",
    [
        "default",  # keywords are upper case
        "DEFAUL",
        "DEFAULT/L",  # DEFAULT takes no case suffix
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=Staff.*/$1",  # no closing slash
        "rule:^CN=(.*?),OU=Staff.*$/$1/",
        "RULE:^CN=(.*?),OU=Staff.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=Staff.*$/L",  # pattern and suffix, no replacement
        "RULE:^CN=(.*?),OU=Staff.*$/U",
        "RULE:^CN=(.*?),OU=Staff.*$/LU",
        "RULE:^CN=(unclosed/$1/",  # not a regular expression
    ],
)
def test_rules_that_do_not_parse(rules: str) -> None:
    with pytest.raises(InvalidRules):
        SslPrincipalMapper(rules)


def test_the_first_rule_that_applies_names_the_principal() -> None:
    mapper = SslPrincipalMapper(
        ", ".join(
            [
                "RULE:^CN=(.*?),OU=Staff.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
        )
    )
    assert mapper.name("CN=Ada,OU=Staff,O=Org,C=UK") == "ada"
    assert mapper.name("CN=Ada,OU=R&D,O=lab,L=London,ST=LDN,C=UK") == "ada@r&d"
    assert mapper.name("cn=ada,ou=rnd,dc=lab,dc=org") == "ADA@RND"
    assert mapper.name("cN=ada,OU=Engines,O=Analytical") == "ADA"
    assert mapper.name("OU=Engines,O=Analytical,C=UK") == "OU=Engines,O=Analytical,C=UK"


def test_a_name_no_rule_applies_to_is_refused() -> None:
    mapper = SslPrincipalMapper("RULE:^CN=([^,]+),OU=Staff$/$1/")
    assert mapper.name("CN=ada,OU=Staff") == "ada"
    with pytest.raises(NoMatchingRule):
        mapper.name("CN=ada,OU=Guests")
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("").name("CN=ada")


@pytest.mark.parametrize(
    ("rules", "parsed"),
    [
        ("", "[]"),
        ("DEFAULT", "[DEFAULT]"),
        ("RULE://", "[RULE:/]"),
        ("RULE:/.*/", "[RULE:/.*]"),
        ("RULE:/.*/L", "[RULE:/.*/L]"),
        ("RULE://,DEFAULT", "[RULE:/, DEFAULT]"),
        ("  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"),
        # Blanks inside a rule belong to its pattern and replacement.
        ("  RULE:   /     / ,  DEFAULT  ", "[RULE:   /     , DEFAULT]"),
        ("  RULE:  /     /U   ,DEFAULT  ", "[RULE:  /     /U, DEFAULT]"),
        (
            "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
            "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
        ),
        # Empty rules are skipped.
        (",   , , ,      , , ,   ", "[]"),
        (",,RULE://,,,DEFAULT,,", "[RULE:/, DEFAULT]"),
        (",  , RULE: /   /    ,,,   DEFAULT, ,   ", "[RULE: /   , DEFAULT]"),
        ("     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,", "[RULE:   /  /U, DEFAULT]"),
        # Escaped characters, slashes among them, stay in the rule.
        (r"RULE:\/\\\(\)\n\t/\/\//", r"[RULE:\/\\\(\)\n\t/\/\/]"),
        (r"RULE:\**\/+/*/L,RULE:\/*\**/**/", r"[RULE:\**\/+/*/L, RULE:\/*\**/**]"),
        # Commas and keywords inside patterns and replacements.
        (
            r"RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, "
            "/DEFAULT/,DEFAULT",
            r"[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, "
            "RULE:, DEFAULT, /DEFAULT, DEFAULT]",
        ),
    ],
)
def test_how_a_list_of_rules_is_split(rules: str, parsed: str) -> None:
    assert str(SslPrincipalMapper(rules)) == parsed


def test_an_escaped_comma_with_blanks_stays_in_the_name() -> None:
    mapper = SslPrincipalMapper(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.name(r"CN=Lovelace\, Ada,OU=Staff,DC=lab,DC=org") == r"Lovelace\, Ada"


def test_replacements_read_as_java_writes_them() -> None:
    # A group number the pattern lacks stays text; \ makes the next character literal.
    mapper = SslPrincipalMapper(r"RULE:^CN=(\w+),O=(\w+)$/$2\$1-$3-$21/")
    assert mapper.name("CN=ada,O=lab") == "lab$1-$3-lab1"
    assert SslPrincipalMapper(r"RULE:^CN=(?<who>\w+)$/${who}/U").name("CN=ada") == "ADA"
