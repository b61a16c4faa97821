// The shared field and number parsing of the spec grammars (model/text_fields.h).
#include <gtest/gtest.h>

#include "model/text_fields.h"

using namespace perfloom;

TEST(TextFields, TrimAndSplitKeepEveryField) {
  EXPECT_EQ(trim("  a b \t\n"), "a b");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(split_fields(" a , b,,c ", ','), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(split_fields("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(split_fields("x,", ','), (std::vector<std::string>{"x", ""}));
}

TEST(TextFields, NumbersAreTheWholeStringAndFinite) {
  double d = -1;
  EXPECT_TRUE(parse_double("2.5", d));
  EXPECT_EQ(d, 2.5);
  EXPECT_TRUE(parse_double("+1e3", d));
  EXPECT_EQ(d, 1000);
  for (const char* bad : {"", "2.5x", " 2", "inf", "nan", "1e400", "+", "+-1", "0x10", "1,5"}) {
    d = 7;
    EXPECT_FALSE(parse_double(bad, d)) << bad;
    EXPECT_EQ(d, 7) << bad;  // untouched on failure
  }
  int64_t i = 0;
  EXPECT_TRUE(parse_int("-42", i));
  EXPECT_EQ(i, -42);
  EXPECT_TRUE(parse_int("+8", i));
  EXPECT_EQ(i, 8);
  for (const char* bad : {"", "1.0", "99999999999999999999", "4k", "+"}) EXPECT_FALSE(parse_int(bad, i)) << bad;
}
