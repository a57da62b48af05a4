"""A small glossary test set written for tt: French sentences using glossary terms, with reference
translations that use the glossary's English (scripts/glossary_compare.py)."""

TERMS: tuple[tuple[str, str], ...] = (
    ("Parlement européen", "European Parliament"),
    ("mot de passe", "password"),
    ("ordinateur portable", "laptop"),
    ("logiciel", "software"),
    ("médecin", "physician"),
    ("gare", "railway station"),
    ("courriel", "email"),
    ("mairie", "town hall"),
)

CASES: list[tuple[str, str]] = [
    ("Le Parlement européen vote demain.", "The European Parliament votes tomorrow."),
    ("J'ai oublié mon mot de passe.", "I forgot my password."),
    ("Mon ordinateur portable est cassé.", "My laptop is broken."),
    ("Ce logiciel est gratuit.", "This software is free."),
    ("Le médecin est arrivé.", "The physician arrived."),
    ("Où est la gare ?", "Where is the railway station?"),
    ("Envoie-moi un courriel.", "Send me an email."),
    ("La mairie est fermée le dimanche.", "The town hall is closed on Sundays."),
    ("Tom a changé son mot de passe hier.", "Tom changed his password yesterday."),
    ("Le médecin m'a dit de rester au lit.", "The physician told me to stay in bed."),
    ("Nous sommes allés à la gare à pied.", "We walked to the railway station."),
    ("Elle a acheté un nouvel ordinateur portable.", "She bought a new laptop."),
    ("Il travaille au Parlement européen.", "He works at the European Parliament."),
    ("J'ai reçu ton courriel ce matin.", "I received your email this morning."),
    ("Ce logiciel ne marche pas sur mon ordinateur portable.", "This software doesn't work on my laptop."),
    ("La mairie est près de la gare.", "The town hall is near the railway station."),
]
