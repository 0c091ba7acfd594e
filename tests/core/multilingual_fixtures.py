"""Memory entries and messages in seven languages, written for this project.

Each fixture: a message, the words :func:`unicode_words` must read from it
(worked out by hand from the rules, not copied from the function), the entry
that is about the same thing, and two entries that are not. Only characters
assigned in Unicode 13.0 are used, so the words do not depend on the
interpreter's tables.
"""

from __future__ import annotations

FIXTURES = {
    "zh": {
        "message": "明天把数据库迁移到新服务器",
        "words": {"明天", "天把", "把数", "数据", "据库", "库迁", "迁移", "移到", "到新", "新服",
                  "服务", "务器"},
        "match": "数据库迁移前先备份生产数据",
        "others": ["周末去超市买水果和牛奶", "给妈妈打电话问候生日"],
    },
    "ja": {
        "message": "東京の会議は来週の火曜日です",
        "words": {"東京", "京の", "の会", "会議", "議は", "は来", "来週", "週の", "の火", "火曜",
                  "曜日", "日で", "です"},
        "match": "来週の会議の資料を東京オフィスに送る",
        "others": ["猫に餌をあげるのを忘れない", "図書館で本を返却する"],
    },
    "ko": {
        "message": "내일 회의 자료를 준비해 주세요",
        "words": {"내일", "회의", "자료", "료를", "준비", "비해", "주세", "세요"},
        "match": "회의 자료는 금요일까지 준비",
        "others": ["주말에 등산을 갑니다", "우유와 빵을 사야 한다"],
    },
    "ru": {
        "message": "Перенести миграцию базы данных на пятницу",
        "words": {"перенести", "миграцию", "базы", "данных", "пятницу"},
        "match": "Миграцию базы данных проверить в пятницу",
        "others": ["Купить молоко и хлеб", "Позвонить маме вечером"],
    },
    "fr": {
        "message": "Réserver une table au café près de la gare",
        "words": {"réserver", "une", "table", "café", "près", "gare"},
        "match": "Le café près de la gare ferme tôt le dimanche",
        "others": ["Acheter des légumes au marché", "Répondre au courriel du médecin"],
    },
    "de": {
        "message": "Die Straße zur Prüfung sperren",
        "words": {"die", "strasse", "zur", "prüfung", "sperren"},
        "match": "Die STRASSE bleibt bis zur PRÜFUNG gesperrt",
        "others": ["Brot und Käse einkaufen", "Oma zum Geburtstag anrufen"],
    },
    "hi": {
        "message": "कल डेटाबेस का बैकअप लेना है",
        "words": {"डेटाबेस", "बैकअप", "लेना"},
        "match": "डेटाबेस का बैकअप रोज़ रात को",
        "others": ["बाज़ार से सब्ज़ी लाना", "माँ को फ़ोन करना"],
    },
}
