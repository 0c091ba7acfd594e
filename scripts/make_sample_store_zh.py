"""Write poolsplit_core/data/sample_store_zh.jsonl: the Chinese store of ``demo --lang zh``.

The same shape as the English sample (scripts/make_sample_store.py): a year
of a personal agent's memory for a software engineer with three work
projects (``atlas`` billing, ``harbor`` infrastructure, ``lumen`` mobile app)
and a ``home`` life, in the same eight types, with ten behavioural
corrections written months ago and some retired or superseded entries. Every
entry comes from the templates below, drawn with ``random.Random(SEED)`` and
dated relative to a fixed ``NOW``, so the file is the same byte for byte on
every run::

    python scripts/make_sample_store_zh.py          # rewrite the shipped file
    python scripts/make_sample_store_zh.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import make_sample_store  # the sibling script: JSON Lines output and --check
from make_sample_store import _iso

SEED = 20261102
NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
OUT = (Path(__file__).resolve().parent.parent / "poolsplit_core" / "data"
       / "sample_store_zh.jsonl")

# Each topic: (project, tags, subjects). The demo's queries use the same words.
TOPICS = {
    "migration": ("atlas", ["数据库", "postgres"], [
        "发票表的数据库迁移", "Postgres升级到16版", "发票明细的迁移脚本", "客户编号的数据库索引",
    ]),
    "invoices": ("atlas", ["账单", "导出"], [
        "发票导出成CSV", "每月的发票批处理", "发票PDF模板", "发票金额四舍五入的缺陷",
    ]),
    "release": ("atlas", ["发布", "ci"], [
        "2.4版的发布说明", "发布分支", "紧急修复版本", "账单模块的更新日志",
    ]),
    "tests": ("atlas", ["ci", "测试"], [
        "不稳定的集成测试", "CI上的测试套件", "限流功能的测试", "很慢的端到端测试",
    ]),
    "review": ("atlas", ["评审", "git"], [
        "限流修复的合并请求", "积压的代码评审", "导出重构的评审", "主分支的提交历史",
    ]),
    "deploy": ("harbor", ["部署", "kubernetes"], [
        "预发环境的部署", "Kubernetes集群升级", "API的Helm配置", "生产环境的部署流水线",
    ]),
    "backups": ("harbor", ["备份", "存储"], [
        "每晚的数据库备份", "S3上的备份存储桶", "备份恢复演练", "备份存储桶的Terraform模块",
    ]),
    "alerts": ("harbor", ["值班", "监控"], [
        "磁盘使用率告警", "值班轮换表", "延迟监控的Grafana看板", "故障复盘会议",
    ]),
    "secrets": ("harbor", ["安全"], [
        "预发环境的API密钥", "密钥管理服务", "外包人员的预发权限", "密钥轮换计划",
    ]),
    "ios": ("lumen", ["移动端", "ios"], [
        "Xcode Cloud上的iOS构建", "App Store审核", "TestFlight的崩溃报告", "推送通知设置",
    ]),
    "design": ("lumen", ["设计", "会议"], [
        "和设计团队讨论引导页面", "设计评审会议", "设计师给的图标", "深色模式的配色",
    ]),
    "taxes": ("home", ["财务"], [
        "季度税款", "给会计的报销单据", "给里昂客户的发票", "增值税申报",
    ]),
    "health": ("home", ["健康"], [
        "牙医预约", "马拉松训练计划", "理疗练习", "周日的长跑",
    ]),
    "household": ("home", ["杂事"], [
        "购物清单", "给安娜的生日礼物", "修自行车", "清理笔记本电脑磁盘",
    ]),
    "travel": (None, ["出行"], [
        "去柏林的火车票", "里斯本的会议演讲", "团建的酒店预订", "和里斯本的玛雅通话",
    ]),
}

PEOPLE = ["玛雅", "乔纳斯", "普丽娅", "汤姆", "莉娅", "小山", "安娜", "拉维"]
DAYS = ["周一", "周二", "周三", "周四", "周五", "迭代结束"]

TEMPLATES = {
    "task": [
        "{day}之前完成{s}。",
        "跟进{p}关于{s}的进展。",
        "评审{s}并给{p}留意见。",
        "把{s}的状态写进周报。",
        "这周帮{p}解决{s}的阻塞。",
        "{day}留出时间处理{s}。",
    ],
    "fact": [
        "{p}负责{s}，有问题找他。",
        "{s}春天改过一次，现在还能用。",
        "{s}的操作手册在团队维基的运维目录下。",
        "{s}依赖平台仓库里的共享配置。",
        "{p}说{s}从头到尾大约需要两个小时。",
    ],
    "preference": [
        "汇报{s}时，用户喜欢简短的要点。",
        "关于{s}，用户更喜欢清单而不是长文。",
        "凡是涉及{s}的事都要抄送{p}。",
        "讨论{s}时，用户要具体数字，不要形容词。",
    ],
    "procedure": [
        "处理{s}：先看监控看板，再读最新日志，然后写下计划。",
        "{s}的步骤：开分支、修改、跑检查、请{p}评审。",
        "对于{s}，先确认现状，再一次只改一处。",
        "{s}的例行流程：记下改了什么、通知了谁、何时复查。",
    ],
    "note": [
        "和{p}聊了{s}，还没有结论。",
        "{day}的站会上又提到了{s}。",
        "想法：等忙完后把{s}的一部分自动化。",
        "{p}提到{s}比预期的慢。",
        "提醒：{s}在{day}的议程上。",
        "关于{s}的悬而未决的问题：谁来签字确认？",
    ],
    "skill": [
        "技能：先把命令写下来，处理{s}快多了。",
        "技能：现在不用问{p}也能排查{s}。",
        "技能：学会了让{s}更快的快捷键。",
    ],
    "growth": [
        "成长：想更准确地估算{s}的工作量。",
        "成长：练习向非工程师解释{s}。",
        "成长：{s}之后找{p}要反馈。",
    ],
}

# (type, how many, base_priority range, share retired)
PLAN = [
    ("task", 130, (7, 9), 0.12),
    ("fact", 110, (6, 8), 0.05),
    ("preference", 55, (6, 8), 0.05),
    ("procedure", 70, (6, 8), 0.04),
    ("note", 140, (5, 7), 0.06),
    ("skill", 30, (2, 3), 0.05),
    ("growth", 16, (1, 2), 0.0),
]

# Behavioural corrections, each with the topic of the situation it exists for.
CORRECTIONS = [
    ("绝对不要强推到主分支。紧急修复先推到分支，开合并请求，让CI跑完。", "release"),
    ("说任务完成之前，一定要先跑完整的测试套件。", "tests"),
    ("生产环境的数据库迁移之前，必须先做一次新的备份。", "migration"),
    ("删除项目目录以外的任何文件之前先问我。", "household"),
    ("绝对不要把API密钥或密码贴到聊天或提交里，要用密钥管理服务分享。", "secrets"),
    ("给会计写信时，金额用欧元，不要用美元。", "taxes"),
    ("上午十点前不要安排会议，上午留给专注工作。", "design"),
    ("约通话时间前先确认时区，玛雅在里斯本。", "travel"),
    ("提交信息用祈使语气，并写上工单编号。", "review"),
    ("告警安静满三十分钟之前，不要告诉值班同事故障已解决。", "alerts"),
]


def build(seed: int = SEED) -> list[dict[str, object]]:
    """Return the store's entries, in file order; a pure function of ``seed``."""
    rng = random.Random(seed)
    topics = sorted(TOPICS)
    entries: list[dict[str, object]] = []

    for n, (content, topic) in enumerate(CORRECTIONS, start=1):
        project, tags, _ = TOPICS[topic]
        entries.append({
            "id": f"correction-{n:03d}",
            "type": "correction",
            "scope": "always",
            "content": content,
            "base_priority": 10,
            "project": project,
            "tags": list(tags),
            "created": _iso(NOW - timedelta(days=rng.randint(120, 360), hours=rng.randint(0, 23))),
        })

    for kind, count, (low, high), retired_share in PLAN:
        for n in range(1, count + 1):
            topic = rng.choice(topics)
            project, tags, subjects = TOPICS[topic]
            subject = rng.choice(subjects)
            text = rng.choice(TEMPLATES[kind]).format(
                s=subject, p=rng.choice(PEOPLE), day=rng.choice(DAYS))
            entry: dict[str, object] = {
                "id": f"{kind}-{n:03d}",
                "type": kind,
                "content": text,
                "base_priority": rng.randint(low, high),
                "project": project,
                "tags": rng.sample(tags, k=rng.randint(1, len(tags))),
                "created": _iso(NOW - timedelta(days=rng.uniform(0.5, 365))),
            }
            if rng.random() < 0.1:
                entry["token_count"] = rng.randint(150, 600)
            if rng.random() < retired_share:
                entry["status"] = "retired"
                if rng.random() < 0.6 and n > 1:
                    entry["superseded_by"] = f"{kind}-{rng.randint(1, n - 1):03d}"
            entries.append(entry)
    return entries


def main(argv: list[str] | None = None) -> int:
    return make_sample_store.main(argv, build=build, out=OUT,
                                  script="scripts/make_sample_store_zh.py",
                                  description=__doc__.splitlines()[0])


if __name__ == "__main__":
    raise SystemExit(main())
