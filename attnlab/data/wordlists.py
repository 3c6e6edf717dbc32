"""Word lists by part of speech, and a small phrase grammar over them, for search queries.

:class:`attnlab.data.querygen.VariedQueryGenerator` builds queries by
expanding :data:`EN_GRAMMAR` or :data:`ZH_GRAMMAR` at random. Many sentence
shapes compete (questions that start with a question word, keyword strings
that start with an adjective or a noun, requests that start with a verb,
statements that start with a pronoun, comparisons), most parts are optional
and words have different lengths in Chinese, so a given token position holds
a noun in one query, a verb or a function word in the next. That is what a
test of "this head attends by position, not by content" needs: in a corpus
where position 3 is always the object, a head that follows objects looks
positional.

Format of a grammar: symbol -> list of alternatives; an alternative is a
string of space-separated items:

* ``NAME``: another symbol of the grammar, or a word list of :data:`EN_WORDS`
  / :data:`ZH_WORDS` (its part of speech is the tag of the word drawn);
* ``word/TAG``: that literal word, tagged ``TAG``;
* a trailing ``?`` makes an item optional (kept with probability
  :data:`attnlab.data.querygen.KEEP_OPTIONAL`).

English words are common words meant to be one word piece of a BERT uncased
vocabulary (the generator drops those that are not, given a tokenizer).
Chinese words are 1-4 characters (one token per character).
"""

from __future__ import annotations

#: Part-of-speech tags used by the word lists (a query's tags say which role each position holds).
TAGS = {
    "NOUN": "noun", "NAME": "proper noun", "VERB": "verb", "ADJ": "adjective", "ADV": "adverb",
    "PRON": "pronoun", "DET": "determiner", "PREP": "preposition", "WH": "question word",
    "AUX": "auxiliary", "CONJ": "conjunction", "NUM": "numeral", "PART": "particle",
    "TIME": "time word", "INTJ": "interjection",
}


def _words(text: str) -> list[str]:
    return text.split()


# --------------------------------------------------------------------------- English

EN_WORDS: dict[str, tuple[str, list[str]]] = {
    # list name: (tag, words)
    "N": ("NOUN", _words(
        "rice pasta bread soup chicken beef fish eggs salad pizza cake cheese apple coffee tea milk water "
        "phone laptop computer printer camera keyboard screen battery charger router speaker watch "
        "dog cat puppy kitten bird horse rabbit garden plant tree flower lawn kitchen bathroom bedroom "
        "sofa table chair window door floor wall roof car bike bus train plane ticket hotel beach "
        "museum park market river lake mountain island city village school teacher student exam "
        "homework lesson book song movie game guitar piano job interview resume salary rent loan "
        "tax bank card account password email message photo video fever cough headache rash doctor "
        "medicine back knee tooth skin hair jacket shirt dress bag gift wedding party birthday "
        "dinner lunch breakfast recipe oven pan knife wine beer juice snack dessert baby child family "
        "friend neighbor boss team weekend holiday trip flight visa map")),
    "NP_PL": ("NOUN", _words(
        "hotels flights shoes books games movies songs recipes apps laptops phones cars bikes tickets "
        "restaurants museums parks beaches jobs courses classes plants flowers toys gifts clothes "
        "jackets snacks cookies eggs noodles beans vegetables fruits dogs cats kids students friends")),
    "NAME": ("NAME", _words(
        "paris london berlin rome madrid tokyo boston chicago seattle denver miami toronto sydney dublin "
        "vienna prague lisbon athens oslo venice milan munich amsterdam geneva stockholm warsaw "
        "budapest singapore seoul bangkok delhi cairo dubai houston atlanta austin portland "
        "texas florida california canada mexico spain italy france japan china india")),
    "V": ("VERB", _words(
        "cook bake boil fry grill make clean wash fix repair paint build plant grow water feed train "
        "teach learn study read write play watch buy sell rent book find get use open close start stop "
        "change reset install update delete save send share move pack store freeze cut fold iron "
        "draw sing dance swim run walk drive ride visit pay keep replace remove")),
    "VT": ("VERB", _words("find show give book buy compare recommend list suggest")),
    "V3": ("VERB", _words(
        "keeps stops needs wants smells looks feels sounds works breaks leaks shakes hurts itches")),
    "ING": ("VERB", _words(
        "running swimming cooking cleaning baking walking driving reading studying working sleeping "
        "eating drinking painting traveling camping hiking fishing shopping dancing singing")),
    "A": ("ADJ", _words(
        "best cheap free quiet famous old small big nice good new fast easy simple healthy quick "
        "safe warm cold hot dry wet soft hard long short light dark fresh clean broken loud slow "
        "local little large modern strong weak sweet sour spicy green red blue black white")),
    "PA": ("ADJ", _words(
        "safe warm cold hot dry wet soft slow loud quiet clean broken expensive busy crowded noisy dirty "
        "sticky heavy open closed free healthy fresh")),
    "ADV": ("ADV", _words("fast again often always never still really very too so quickly slowly well")),
    "PRON": ("PRON", _words("i we you they")),
    "DET": ("DET", _words("a the my your our this that every")),
    "POSS": ("DET", _words("my your our his her their")),
    "P": ("PREP", _words("in at for with near from to without after before during under over on by")),
    "WH": ("WH", _words("how what where why when which")),
    "AUX": ("AUX", _words("do can should could would will")),
    "AUX3": ("AUX", _words("does can should will did")),
    "BE": ("AUX", _words("is was")),
    "CONJ": ("CONJ", _words("and or but")),
    "NUM": ("NUM", _words("two three four five six ten twenty")),
    "T": ("TIME", _words("today tomorrow tonight now yesterday")),
    "HI": ("INTJ", _words("please hey ok hi")),
}

EN_GRAMMAR: dict[str, list[str]] = {
    "Q": [
        "HI? WH AUX PRON V NP PP? T?",            # how do i clean a leather sofa without water
        "HI? WH AUX3 NP V ADV? PP?",             # why does my old cat sleep so much
        "HI? WH BE NP ADV? PA PP? T?",             # why is my phone so slow
        "HI? WH BE the/DET A N PP PP?",           # what is the best pizza in rome
        "A? NPL PP PP? T?",                       # cheap hotels near the beach in lisbon
        "NP CONJ NP PP? PP?",                      # rice and beans for dinner
        "VT me/PRON? NPL PP PP? T?",                 # find me cheap flights to rome tomorrow
        "V NP PP? PP? ADV?",                       # fix a leaking roof without tools
        "AUX PRON V NP PP? T?",                    # can i freeze cooked rice
        "AUX3 NP V NP PP?",                        # does a cat need a bath
        "BE NAME PA PP? T?",                       # is lisbon safe at night
        "POSS N V3 ING PP? T? ADV?",               # my dog keeps eating grass at night
        "POSS A? N V3 PA PP? T?",                  # my new laptop feels hot after lunch
        "NUM A? NPL PP PP?",                       # ten easy recipes for kids
        "ING P NAME PP? T?",                       # swimming in geneva during winter
        "N CONJ N PP? T?",                         # coffee or tea after dinner
        "A N PP ING PP?",                          # good shoes for running in winter
        "T? WH to/PART V NP PP?",                  # today how to clean a pan with salt
        "NP P NAME T?",                            # the best bakery in paris
    ],
    "NP": ["DET? A? N", "DET N", "NAME", "DET A N"],
    "NPL": ["A? NP_PL", "NUM NP_PL"],
    "PP": ["P NP", "P NAME", "P NPL"],
}

# --------------------------------------------------------------------------- Chinese

ZH_WORDS: dict[str, tuple[str, list[str]]] = {
    "N": ("NOUN", _words(
        "米饭 面条 饺子 包子 红烧肉 排骨 鸡蛋 西红柿 土豆 豆腐 火锅 蛋糕 牛奶 咖啡 茶 水果 苹果 葡萄 "
        "手机 电脑 耳机 相机 空调 冰箱 洗衣机 路由器 充电宝 键盘 屏幕 电池 "
        "猫 狗 小猫 小狗 兔子 金鱼 鹦鹉 花 绿萝 多肉 草莓 "
        "房子 厨房 卫生间 沙发 桌子 窗户 地板 衣服 鞋子 包 "
        "高铁 火车 飞机 机票 车票 酒店 民宿 景点 公园 博物馆 海边 夜市 "
        "孩子 宝宝 老人 学生 老师 妈妈 爸爸 朋友 同事 老板 "
        "英语 数学 钢琴 吉他 编程 考试 作业 简历 工资 房租 "
        "感冒 发烧 咳嗽 头疼 牙疼 失眠 过敏 药 医院 医生")),
    "NAME": ("NAME", _words(
        "北京 上海 广州 深圳 杭州 成都 重庆 武汉 西安 南京 苏州 长沙 青岛 厦门 昆明 大理 "
        "三亚 桂林 丽江 哈尔滨 天津 郑州 济南 拉萨 乌鲁木齐 微信 支付宝 淘宝 抖音 王者荣耀")),
    "V": ("VERB", _words(
        "做 煮 炒 蒸 烤 洗 修 换 买 卖 学 教 玩 看 听 养 种 喂 去 找 选 带 吃 喝 穿 "
        "清洗 修理 下载 安装 设置 注销 预订 退款 保存 删除 提高 练习 准备 整理")),
    "VI": ("VERB", _words("下雨 下雪 堵车 掉毛 发烧 咳嗽 失眠 长胖 漏水 死机 卡顿 发热 闪退 过敏")),
    "A": ("ADJ", _words(
        "好吃 好玩 便宜 安全 干净 简单 方便 健康 新鲜 有名 安静 热闹 舒服 实用 贵 快 慢 好 "
        "冷 热 大 小 新 旧 甜 辣 软 嫩")),
    "ADV": ("ADV", _words("总是 一直 经常 突然 还 又 最 很 太 特别 真的 已经")),
    "PRON": ("PRON", _words("我 我们 你 他 她 大家 自己")),
    "DEM": ("DET", _words("这个 那个 这种 哪个 每个")),
    "NUM": ("NUM", _words("一 两 三 五 十 几 一些")),
    "CL": ("PART", _words("个 种 家 本 条 只 天 次")),
    "P": ("PREP", _words("在 去 到 从 给 用 跟 对")),
    "WH": ("WH", _words("怎么 为什么 哪里 什么 怎样 多少 哪些")),
    "AUX": ("AUX", _words("能 可以 会 要 应该 需要 想")),
    "T": ("TIME", _words("今天 明天 周末 晚上 早上 下周 冬天 夏天 春节 现在 每天")),
    "ASK": ("INTJ", _words("请问 求问 问一下 急")),
    "END": ("PART", _words("吗 呢 吧 啊")),
    "CONJ": ("CONJ", _words("和 或者 还是 跟")),
    "Q": ("WH", _words("怎么办 好不好 可以吗 有用吗 正常吗 多少钱 在哪里")),
}

ZH_GRAMMAR: dict[str, list[str]] = {
    "Q": [
        "ASK? NAME T? AUX? VI END",                # 北京明天会下雨吗
        "ASK? WH V N A? END?",                     # 怎么做红烧肉好吃
        "ASK? N WH V END?",                        # 红烧肉怎么做
        "ASK? 为什么/WH N ADV? VI",                 # 为什么猫总是掉毛
        "推荐/VERB NUM? CL? A 的/PART N",            # 推荐几个好玩的景点
        "ASK? PRON? N ADV? VI Q",                  # 我家狗一直掉毛怎么办
        "N CONJ N 哪个/DET A",                      # 米饭和面条哪个健康
        "NAME 哪里/WH 有/VERB A 的/PART N",          # 成都哪里有好吃的火锅
        "T? 去/VERB NAME V 什么/WH",                 # 周末去杭州玩什么
        "PRON AUX V N Q?",                         # 我想学钢琴可以吗
        "N V 了/PART ADV? VI Q",                    # 手机用了很久发热正常吗
        "DEM N A 不/ADV A",                         # 这个酒店安静不安静
        "PRON AUX P NAME V N END?",                # 我想去三亚看海 ...
        "T N ADV? A Q?",                           # 冬天房子太冷怎么办
        "A 的/PART N V 几/NUM CL",                  # 便宜的机票买几张
        "P NAME 的/PART N 多少钱/WH",                 # 到北京的高铁多少钱
        "ASK? N P N 里/PART AUX V 吗/PART",          # 猫在房子里能养吗
        "PRON 的/PART N WH 又/ADV VI 了/PART",        # 我的手机为什么又卡顿了
    ],
}
